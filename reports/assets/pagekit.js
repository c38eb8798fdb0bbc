// The frame every chart page of seckill-harness shares (report.html, the
// trend page); each page's own script follows it in the same <script>
// element. It marks the page for tests and tools: data-errors="..." on
// <body> (plus the visible #js-errors banner) when anything fails,
// data-rendered="true" on each chart once ECharts finished drawing it and
// data-rendered="N" on <body> once all N charts have.
var seckillPage = (function () {
  'use strict';
  document.documentElement.classList.remove('no-js');
  var body = document.body;
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    body.setAttribute('data-errors', errors.join(' | '));
    var b = document.getElementById('js-errors');
    if (b) {
      b.hidden = false;
      b.textContent = 'Chart error: ' + errors.join('; ');
    }
  }
  window.addEventListener('error', function (e) { fail(e.message || e); });

  // draw parses the JSON in the element #dataId and draws one SVG chart
  // into every element with a data-chart attribute: chartOf(name, data)
  // (name: the attribute's value) returns {option, group, finished};
  // group (optional) links charts for a shared tooltip and zoom, finished
  // (optional) is called with the chart once it is drawn. A chart that
  // throws is reported through fail and the others are still drawn.
  function draw(dataId, chartOf) {
    var els = document.querySelectorAll('[data-chart]');
    var expected = els.length, finished = 0;
    var charts = [], groups = {};
    var data;
    try {
      data = JSON.parse(document.getElementById(dataId).textContent);
      if (typeof echarts === 'undefined') throw new Error('the ECharts library did not load');
    } catch (e) {
      fail(e.message || e);
      return;
    }
    Array.prototype.forEach.call(els, function (el) {
      var name = el.getAttribute('data-chart');
      try {
        var spec = chartOf(name, data);
        var chart = echarts.init(el, null, { renderer: 'svg' });
        var counted = false;
        chart.on('finished', function () {
          if (counted) return;
          counted = true;
          el.setAttribute('data-rendered', 'true');
          if (spec.finished) spec.finished(chart, el);
          finished++;
          if (finished === expected && !errors.length) body.setAttribute('data-rendered', String(finished));
        });
        chart.setOption(spec.option);
        if (spec.group) {
          chart.group = spec.group;
          groups[spec.group] = true;
        }
        charts.push(chart);
      } catch (e) {
        fail('chart ' + name + ': ' + (e.message || e));
      }
    });
    Object.keys(groups).forEach(function (g) { echarts.connect(g); });
    window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });
  }

  return { fail: fail, draw: draw };
})();
