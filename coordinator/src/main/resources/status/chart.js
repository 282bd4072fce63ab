// The status page's charts: a budget's last 60 s of first attempts, retries granted and retries
// denied per second. The coordinator reports a budget's window bucket by bucket (10 buckets, a
// window's worth); the page keeps what it has seen of them, poll after poll, for 60 s, so a chart
// covers 60 s once the page has been open that long (at once for a window of 60 s or more). Data
// reaches the page as numbers drawn into SVG elements, never as markup.
'use strict';
var RetryBudgetChart = (function () {
  var SPAN_MS = 60000;
  var SVG = 'http://www.w3.org/2000/svg';
  var SERIES = [['requests', 's-req', 'first attempts'], ['retries', 's-ret', 'retries granted'],
    ['denied', 's-den', 'retries denied']];

  function num(n) { return typeof n === 'number' && isFinite(n) && n > 0 ? n : 0; }

  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) { e.textContent = String(text); }
    return e;
  }

  function rate(r) {
    var v = num(r);
    if (v >= 100) { return Math.round(v).toLocaleString('en-US'); }
    return v.toLocaleString('en-US', { maximumFractionDigits: v >= 10 ? 0 : v >= 1 ? 1 : 2 });
  }

  // One budget's buckets seen so far, by start (Redis's clock).
  function History() {
    this.byStart = {};
    this.bucketMs = 0;
    this.nowMs = 0;
  }

  // Merges a budget's status (with bucket_ms, now_ms, buckets); a bucket seen again replaces the
  // older sight of it (the one filling grows), a changed bucket length starts over.
  History.prototype.add = function (b) {
    if (!b || !Array.isArray(b.buckets) || num(b.bucket_ms) === 0 || num(b.now_ms) === 0) { return; }
    var self = this;
    if (b.bucket_ms !== this.bucketMs) {
      this.byStart = {};
      this.bucketMs = b.bucket_ms;
    }
    this.nowMs = Math.max(this.nowMs, b.now_ms);
    b.buckets.forEach(function (k) {
      if (typeof k.start_ms === 'number' && k.start_ms <= b.now_ms) {
        self.byStart[k.start_ms] = { start: k.start_ms, requests: num(k.requests), retries: num(k.retries),
          denied: num(k.denied) };
      }
    });
    Object.keys(this.byStart).forEach(function (s) {
      if (self.byStart[s].start + self.bucketMs <= self.nowMs - SPAN_MS) { delete self.byStart[s]; }
    });
  };

  // The buckets oldest first, each with its counts a second: over its length, or for the one
  // filling over the part gone by (at least a second, so its first moments do not spike).
  History.prototype.points = function () {
    var self = this;
    return Object.keys(this.byStart).map(function (s) { return self.byStart[s]; })
      .sort(function (a, b) { return a.start - b.start; })
      .map(function (k) {
        var end = Math.min(k.start + self.bucketMs, self.nowMs);
        var seconds = Math.max(1000, end - k.start) / 1000;
        return { start: Math.max(k.start, self.nowMs - SPAN_MS), end: end, requests: k.requests / seconds,
          retries: k.retries / seconds, denied: k.denied / seconds, counts: k };
      });
  };

  // Counts over the 60 s kept: {requests, retries, denied}.
  History.prototype.totals = function () {
    var t = { requests: 0, retries: 0, denied: 0 };
    var self = this;
    Object.keys(this.byStart).forEach(function (s) {
      SERIES.forEach(function (x) { t[x[0]] += self.byStart[s][x[0]]; });
    });
    return t;
  };

  // Draws the history into an <svg> as a step line per series; opts: {width, height, axes}.
  function draw(el, history, opts) {
    var W = opts.width, H = opts.height;
    var left = opts.axes ? 52 : 2, right = opts.axes ? 10 : 2, top = opts.axes ? 10 : 3, bottom = opts.axes ? 24 : 3;
    var points = history.points();
    var max = 0;
    points.forEach(function (p) { SERIES.forEach(function (x) { max = Math.max(max, p[x[0]]); }); });
    var yMax = max > 0 ? max : 1;
    var now = history.nowMs;
    function x(t) { return left + (W - left - right) * (1 - Math.min(SPAN_MS, Math.max(0, now - t)) / SPAN_MS); }
    function y(v) { return H - bottom - (H - top - bottom) * v / yMax; }
    var parts = [];
    if (opts.axes) {
      parts.push(svg('line', { x1: left, y1: H - bottom, x2: W - right, y2: H - bottom, 'class': 'axis' }));
      parts.push(svg('line', { x1: left, y1: top, x2: left, y2: H - bottom, 'class': 'axis' }));
      parts.push(svg('text', { x: left - 4, y: top + 10, 'text-anchor': 'end' }, rate(yMax) + '/s'));
      parts.push(svg('text', { x: left - 4, y: H - bottom, 'text-anchor': 'end' }, '0'));
      [60, 45, 30, 15, 0].forEach(function (s) {
        parts.push(svg('text', { x: (left + (W - left - right) * (1 - s / 60)).toFixed(1), y: H - bottom + 16,
          'text-anchor': s === 60 ? 'start' : s === 0 ? 'end' : 'middle' }, s === 0 ? 'now' : '-' + s + ' s'));
      });
    }
    SERIES.forEach(function (series) {
      // one polyline per run of adjacent buckets: a gap (polls missed) stays a gap
      var runs = [], run = null, lastEnd = null;
      points.forEach(function (p) {
        if (run === null || p.start > lastEnd) { run = []; runs.push(run); }
        run.push(x(p.start).toFixed(1) + ',' + y(p[series[0]]).toFixed(1));
        run.push(x(p.end).toFixed(1) + ',' + y(p[series[0]]).toFixed(1));
        lastEnd = p.end;
      });
      runs.forEach(function (r) {
        var line = svg('polyline', { points: r.join(' '), 'class': series[1] });
        parts.push(line);
      });
    });
    var totals = history.totals();
    var peak = {};
    SERIES.forEach(function (s) {
      peak[s[0]] = 0;
      points.forEach(function (p) { peak[s[0]] = Math.max(peak[s[0]], p[s[0]]); });
    });
    parts.push(svg('title', {}, 'last 60 s, peak a second: ' + SERIES.map(function (s) {
      return s[2] + ' ' + rate(peak[s[0]]) + '/s';
    }).join(', ')));
    el.replaceChildren.apply(el, parts);
    // what the chart holds, for tests and scripts: counts over the 60 s kept
    el.dataset.requests = String(totals.requests);
    el.dataset.retries = String(totals.retries);
    el.dataset.denied = String(totals.denied);
    el.dataset.buckets = String(points.length);
  }

  return { History: History, draw: draw, rate: rate };
})();
