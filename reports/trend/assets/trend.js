// Charts of seckill-harness's trend page: the option of each chart
// (data-chart="i") over the series (the JSON in #trend-data), drawn and
// marked for tests and tools by reports' pagekit.js (seckillPage.draw),
// plus data-points="n" on each chart (the nights it drew).
(function () {
  'use strict';

  var VERDICT_COLORS = { pass: '#2f9e44', fail: '#e03131', inconclusive: '#f08c00', error: '#862e9c' };
  var UNKNOWN = '#868e96';
  // One colour for a change either way: whether up is worse depends on the
  // figure (a latency, a throughput), which the series does not say.
  var CHANGE_COLOR = '#d9480f';
  // Every night's symbol has this border: the test counts it in the SVG.
  var POINT_BORDER = '#fffffe';
  var FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif';

  function fmt(v) {
    if (v == null || isNaN(v)) return '–';
    var a = Math.abs(v);
    if (a >= 100 || a === 0) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(3);
  }
  // Tooltips are HTML: text from the series (verdicts, run names) is escaped.
  function esc(v) {
    return String(v).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function day(t) { return new Date(t).toISOString().slice(0, 16).replace('T', ' '); }

  function option(c) {
    var unit = c.unit ? ' ' + c.unit : '';
    var points = c.points.map(function (p) {
      var v = (p.verdict || '').toLowerCase();
      return {
        value: [p.t, p.v], verdict: p.verdict || 'unknown', run: p.run || '', samples: p.samples,
        itemStyle: { color: VERDICT_COLORS[v] || UNKNOWN, borderColor: POINT_BORDER, borderWidth: 1 }
      };
    });
    var marks = c.changes.map(function (ch) {
      return {
        xAxis: ch.t,
        lineStyle: { color: CHANGE_COLOR, type: 'dashed', width: 2 },
        label: { formatter: (ch.up ? '↑ ' : '↓ ') + ch.label, position: 'insideEndTop', color: CHANGE_COLOR }
      };
    });
    return {
      animation: false,
      textStyle: { fontFamily: FONT },
      grid: { left: 64, right: 28, top: 36, bottom: 40 },
      tooltip: {
        trigger: 'item',
        formatter: function (p) {
          if (p.seriesIndex !== 0) return 'level ' + fmt(p.value[1]) + esc(unit);
          var s = p.data.samples;
          return day(p.value[0]) + '<br>' + fmt(p.value[1]) + esc(unit) + ' · ' + esc(p.data.verdict) +
            (s ? '<br>per second (' + s[0] + '): ' + fmt(s[1]) + ' / ' + fmt(s[2]) + ' / ' + fmt(s[3]) + esc(unit) + ' min / median / max' : '') +
            (p.data.run ? '<br>' + esc(p.data.run) : '');
        }
      },
      xAxis: { type: 'time' },
      yAxis: { type: 'value', name: c.unit || '', scale: true, axisLabel: { formatter: fmt } },
      series: [
        {
          name: 'night', type: 'line', data: points, symbol: 'circle', symbolSize: 8, showAllSymbol: true,
          lineStyle: { color: '#adb5bd', width: 1 },
          markLine: { symbol: 'none', silent: true, data: marks }
        },
        {
          name: 'level', type: 'line', step: 'end', data: c.levels, symbol: 'none',
          lineStyle: { color: '#4c6ef5', type: 'dashed', width: 1.5 }
        }
      ]
    };
  }

  seckillPage.draw('trend-data', function (name, data) {
    var c = (data || [])[Number(name)];
    if (!c) throw new Error('no data for chart ' + name);
    return {
      option: option(c),
      finished: function (chart, el) {
        el.setAttribute('data-points', String(chart.getModel().getSeriesByIndex(0).getData().count()));
      }
    };
  });
})();
