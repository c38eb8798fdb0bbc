// Charts of the seckill-harness HTML report: the builder of each chart
// (data-chart="kind") over the report's data (the JSON in #report-data),
// drawn and marked for tests and tools by pagekit.js's seckillPage.draw.
(function () {
  'use strict';

  var FAULT_COLORS = ['#e8590c', '#7048e8', '#0c8599', '#c2255c', '#5c940d'];
  var OUTCOME_COLORS = {
    ACCEPTED: '#2f9e44', SOLD_OUT: '#a5b4c4', UNKNOWN: '#f08c00', ERROR: '#e03131', UNSET: '#000000'
  };
  var OTHER_COLORS = ['#4c6ef5', '#ae3ec9', '#15aabf', '#f06595', '#82c91e', '#fab005', '#845ef7', '#20c997', '#868e96'];
  var FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif';

  function fmtMs(v) {
    if (v == null || isNaN(v)) return '–';
    if (v === 0) return '0';
    if (v >= 1000) return v.toFixed(0);
    if (v >= 100) return v.toFixed(1);
    if (v >= 10) return v.toFixed(2);
    if (v >= 1) return v.toFixed(3);
    return v.toPrecision(3);
  }
  // Axis ticks: 0.01, 0.1, 1, 10, 100, 1000 (no trailing zeros).
  function fmtTick(v) { return String(parseFloat(Number(v).toPrecision(3))); }
  function fmtCount(v) { return v == null ? '–' : String(Math.round(v)); }
  // "1 in N" (x = 1/(1-p)) as a percentile label: 10 -> 90%, 1000 -> 99.9%.
  function pctLabel(x) {
    if (x <= 1) return '0%';
    var p = 100 * (1 - 1 / x);
    var digits = Math.max(0, Math.ceil(Math.log10(x) - 1e-9) - 2);
    return p.toFixed(Math.min(digits, 6)) + '%';
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function hexA(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16 & 255) + ',' + (n >> 8 & 255) + ',' + (n & 255) + ',' + a + ')';
  }

  // Fault windows as a markArea on the first series of a time chart.
  function faultAreas(data) {
    if (!data.faults.length) return undefined;
    return {
      silent: false,
      data: data.faults.map(function (f, i) {
        var c = FAULT_COLORS[i % FAULT_COLORS.length];
        return [{
          name: f.label + '  ' + f.from.toFixed(1) + '–' + f.to.toFixed(1) + ' s',
          xAxis: f.from,
          itemStyle: { color: hexA(c, 0.13), borderColor: hexA(c, 0.55), borderWidth: 1, borderType: 'dashed' },
          label: { color: c, fontWeight: 'bold', fontSize: 12, position: 'top', distance: 4 }
        }, { xAxis: f.to }];
      })
    };
  }

  // Unplanned events (report.json's unplanned_events) as red vertical
  // lines: solid for the ones the scenario does not tolerate, dotted for
  // tolerated ones; the label names the kind and the node.
  function eventLines(data) {
    if (!data.events || !data.events.length) return undefined;
    return {
      silent: false, symbol: 'none',
      data: data.events.map(function (e) {
        return {
          name: e.label, xAxis: e.at,
          lineStyle: { color: '#c92a2a', width: 1.5, type: e.tolerated ? 'dotted' : 'solid' },
          label: { formatter: e.label, color: '#c92a2a', position: 'insideEndTop', fontSize: 11 }
        };
      })
    };
  }

  function timeAxis(data) {
    return {
      type: 'value', min: 0, max: Math.max(1, Math.ceil(data.duration_s - 0.05)),
      name: 'seconds since start', nameLocation: 'middle', nameGap: 28,
      minInterval: 1, splitLine: { show: false }, axisLine: { onZero: false }
    };
  }

  function zoom(data) {
    var z = [{ type: 'inside', xAxisIndex: 0, filterMode: 'none' }];
    if (data.duration_s > 120) {
      z.push({ type: 'slider', xAxisIndex: 0, filterMode: 'none', height: 18, bottom: 4 });
    }
    return z;
  }

  function base(extra) {
    var o = {
      animation: false,
      textStyle: { fontFamily: FONT },
      grid: { left: 72, right: 36, top: 64, bottom: 58 },
      legend: { top: 8, type: 'scroll', itemWidth: 18, itemHeight: 10 },
      tooltip: { trigger: 'axis', confine: true }
    };
    for (var k in extra) o[k] = extra[k];
    return o;
  }

  // One line per node (or replica) on the load's time axis, under the
  // fault windows; null points (the node did not answer) break the line.
  function nodeLines(data, lines, yName, fmt) {
    var series = lines.map(function (l) {
      return { name: l.name, type: 'line', data: l.points, connectNulls: false, symbol: 'circle', symbolSize: 4,
        showSymbol: l.points.length <= 120, lineStyle: { width: 1.5 } };
    });
    if (series.length) {
      series[0].markArea = faultAreas(data);
      series[0].markLine = eventLines(data);
    }
    return base({
      xAxis: timeAxis(data),
      yAxis: { type: 'value', name: yName, nameTextStyle: { align: 'left' } },
      dataZoom: zoom(data),
      tooltip: { trigger: 'axis', confine: true, valueFormatter: fmt },
      series: series
    });
  }

  var builders = {
    throughput: function (data) {
      var ts = data.ts;
      var pairs = function (arr) { return ts.x.map(function (x, i) { return [x, arr[i]]; }); };
      var other = 0;
      var series = ts.outcomes.map(function (o) {
        var color = OUTCOME_COLORS[o.name] || OTHER_COLORS[other++ % OTHER_COLORS.length];
        return {
          name: o.name, type: 'bar', stack: 'ops', data: pairs(o.data), barCategoryGap: '18%',
          itemStyle: { color: color }, emphasis: { focus: 'series' }
        };
      });
      series.push({
        name: 'completed / s', type: 'line', data: pairs(ts.completed), step: 'middle', symbol: 'none',
        lineStyle: { width: 2, color: '#1c7ed6' }, itemStyle: { color: '#1c7ed6' }, z: 5
      });
      if (data.target_rate > 0) {
        series[series.length - 1].markLine = {
          silent: true, symbol: 'none', lineStyle: { color: '#495057', type: 'dotted' },
          label: { formatter: 'target ' + data.target_rate + '/s', position: 'insideEndTop', color: '#495057' },
          data: [{ yAxis: data.target_rate }]
        };
      }
      if (series.length) {
        series[0].markArea = faultAreas(data);
        series[0].markLine = eventLines(data);
      }
      return base({
        xAxis: timeAxis(data),
        yAxis: { type: 'value', name: 'operations / s', nameTextStyle: { align: 'left' } },
        dataZoom: zoom(data),
        tooltip: { trigger: 'axis', confine: true, valueFormatter: fmtCount },
        series: series
      });
    },

    latency: function (data) {
      var ts = data.ts;
      var pairs = function (arr) { return ts.x.map(function (x, i) { return [x, arr[i]]; }); };
      var line = function (name, arr, color, width, type) {
        return {
          name: name, type: 'line', data: pairs(arr), connectNulls: false, symbol: 'circle', symbolSize: 4,
          showSymbol: ts.x.length <= 120, lineStyle: { width: width, color: color, type: type || 'solid' },
          itemStyle: { color: color }
        };
      };
      var series = [
        line('p50', ts.p50, '#1c7ed6', 2),
        line('p99', ts.p99, '#e8590c', 2.5),
        line('p99.9', ts.p999, '#ae3ec9', 1.5),
        line('max', ts.max, '#495057', 1, 'dotted'),
        line('service p99', ts.svc_p99, '#2f9e44', 1.5, 'dashed')
      ];
      series[0].markArea = faultAreas(data);
      series[0].markLine = eventLines(data);
      return base({
        xAxis: timeAxis(data),
        yAxis: {
          type: 'log', logBase: 10, name: 'latency ms (log)', nameTextStyle: { align: 'left' },
          axisLabel: { formatter: fmtTick }, minorTick: { show: true }, minorSplitLine: { show: true, lineStyle: { color: '#f1f3f5' } }
        },
        dataZoom: zoom(data),
        tooltip: { trigger: 'axis', confine: true, valueFormatter: function (v) { return fmtMs(v) + ' ms'; } },
        series: series
      });
    },

    node_cpu: function (data) {
      return nodeLines(data, data.servers.cpu, 'CPU % of one core', function (v) { return v == null ? '–' : v.toFixed(1) + ' %'; });
    },
    repl_lag: function (data) {
      return nodeLines(data, data.servers.lag, 'replication lag (bytes)', fmtCount);
    },
    node_memory: function (data) {
      return nodeLines(data, data.servers.memory, 'used memory (MiB)', function (v) { return v == null ? '–' : v.toFixed(1) + ' MiB'; });
    },

    hdr: function (data) {
      var maxX = 10;
      var phaseColors = ['#e8590c', '#2f9e44', '#ae3ec9', '#f08c00', '#0c8599', '#c2255c', '#5c940d', '#845ef7'];
      var pi = 0;
      var series = data.dists.map(function (d) {
        d.points.forEach(function (p) { maxX = Math.max(maxX, p[0]); });
        var color, width = 1.8, type = 'solid';
        if (d.kind === 'service') { color = '#868e96'; type = 'dashed'; width = 1.5; }
        else if (d.overall) { color = '#1c7ed6'; width = 3; }
        else { color = phaseColors[pi++ % phaseColors.length]; }
        return {
          name: d.name, type: 'line', data: d.points, symbol: 'circle', symbolSize: 3, showSymbol: false,
          lineStyle: { color: color, width: width, type: type }, itemStyle: { color: color }, z: d.overall ? 5 : 3
        };
      });
      var top = Math.pow(10, Math.ceil(Math.log10(maxX) - 1e-9));
      return base({
        grid: { left: 72, right: 36, top: 54, bottom: 58 },
        xAxis: {
          type: 'log', logBase: 10, min: 1, max: top, name: 'percentile (1/(1−p), log)', nameLocation: 'middle', nameGap: 30,
          axisLabel: { formatter: pctLabel }, splitLine: { show: true, lineStyle: { color: '#e9ecef' } }
        },
        yAxis: {
          type: 'log', logBase: 10, name: 'latency ms (log)', nameTextStyle: { align: 'left' },
          axisLabel: { formatter: fmtTick }, minorTick: { show: true }, minorSplitLine: { show: true, lineStyle: { color: '#f1f3f5' } }
        },
        tooltip: {
          trigger: 'axis', confine: true, axisPointer: { type: 'line' },
          formatter: function (params) {
            if (!params.length) return '';
            var x = params[0].data[0];
            var head = params[0].data[2] >= 100 ? 'max' : 'p' + pctLabel(x).replace('%', '') + ' (1 in ' + Math.round(x) + ')';
            return esc(head) + '<br>' + params.map(function (p) {
              return p.marker + esc(p.seriesName) + ': <b>' + fmtMs(p.data[1]) + ' ms</b>' +
                (p.data[2] >= 100 ? ' (max)' : ' at p' + pctLabel(p.data[0]).replace('%', ''));
            }).join('<br>');
          }
        },
        series: series
      });
    },

    // Small multiples: one bar chart per variant, side by side, each
    // bucket's units sold (reserved) and left unsold (available).
    compare: function (data) {
      var vs = data.compare.variants;
      var weights = vs.map(function (v) { return Math.max(3, (v.stock.buckets || []).length); });
      var total = weights.reduce(function (a, b) { return a + b; }, 0);
      var left = 6, gap = 3, avail = 100 - left - 2 - gap * (vs.length - 1);
      var grids = [], xs = [], ys = [], series = [];
      vs.forEach(function (v, i) {
        var w = avail * weights[i] / total;
        grids.push({ left: left + '%', width: w + '%', top: 54, bottom: 62 });
        left += w + gap;
        var buckets = v.stock.buckets || [];
        xs.push({
          type: 'category', gridIndex: i, data: buckets.map(function (b) { return 'b' + b.bucket; }),
          name: v.name + (v.passed ? '' : ' (FAIL)'), nameLocation: 'middle', nameGap: 30,
          nameTextStyle: { fontWeight: 'bold', color: v.passed ? '#1f2933' : '#c5221f' },
          axisLabel: { interval: buckets.length > 8 ? 1 : 0, fontSize: 11 }
        });
        ys.push({ type: 'value', gridIndex: i, name: i === 0 ? 'units' : '', nameTextStyle: { align: 'left' } });
        series.push(
          { name: 'sold (reserved)', type: 'bar', stack: 'b' + i, xAxisIndex: i, yAxisIndex: i, itemStyle: { color: '#2f9e44' },
            data: buckets.map(function (b) { return b.reserved; }) },
          { name: 'left (available)', type: 'bar', stack: 'b' + i, xAxisIndex: i, yAxisIndex: i, itemStyle: { color: '#fab005' },
            data: buckets.map(function (b) { return b.available; }) });
      });
      return base({
        grid: grids, xAxis: xs, yAxis: ys, series: series,
        legend: { top: 8, data: ['sold (reserved)', 'left (available)'] },
        tooltip: { trigger: 'axis', confine: true, valueFormatter: fmtCount }
      });
    },

    capacity: function (data) {
      var c = data.capacity;
      var p99 = c.steps.map(function (s) {
        return { value: [s.rate_ops_per_s, s.latency_ms.p99], itemStyle: { color: s.passed ? '#2f9e44' : '#e03131' } };
      });
      var achieved = c.steps.map(function (s) { return [s.rate_ops_per_s, s.throughput_ops_per_s]; });
      var marks = [];
      if (c.target_p99_ms > 0) marks.push({ yAxis: c.target_p99_ms, label: { formatter: 'target p99 ' + c.target_p99_ms + ' ms', position: 'insideEndTop' } });
      if (c.max_rate_ops_per_s > 0) marks.push({ xAxis: c.max_rate_ops_per_s, label: { formatter: 'max ' + c.max_rate_ops_per_s + ' ops/s', position: 'insideEndTop' } });
      return base({
        xAxis: { type: 'value', name: 'offered ops/s', nameLocation: 'middle', nameGap: 28, scale: true },
        yAxis: [
          { type: 'log', logBase: 10, name: 'p99 ms (log)', nameTextStyle: { align: 'left' }, axisLabel: { formatter: fmtTick } },
          { type: 'value', name: 'achieved ops/s', splitLine: { show: false }, nameTextStyle: { align: 'right' } }
        ],
        grid: { left: 72, right: 80, top: 54, bottom: 58 },
        series: [
          {
            name: 'p99', type: 'line', data: p99, symbolSize: 9, lineStyle: { color: '#e8590c', width: 2.5 }, itemStyle: { color: '#e8590c' },
            markLine: marks.length ? { silent: true, symbol: 'none', lineStyle: { color: '#495057', type: 'dashed' }, data: marks } : undefined,
            tooltip: { valueFormatter: function (v) { return fmtMs(v) + ' ms'; } }
          },
          {
            name: 'achieved ops/s', type: 'line', yAxisIndex: 1, data: achieved, symbol: 'rect', symbolSize: 6,
            lineStyle: { color: '#1c7ed6', type: 'dashed' }, itemStyle: { color: '#1c7ed6' }
          }
        ]
      });
    }
  };

  seckillPage.draw('report-data', function (kind, data) {
    if (!builders[kind]) throw new Error('unknown chart ' + kind);
    var time = kind === 'throughput' || kind === 'latency' || kind.indexOf('node_') === 0 || kind === 'repl_lag';
    return { option: builders[kind](data), group: time ? 'time' : '' };
  });
})();
