// The coordinator's status page: polls the read-only JSON API and draws it. Data goes into the
// page only as text (textContent, attributes set one by one): never as markup.
'use strict';
(function () {
  var POLL_MS = 2000;
  var RETRY_MS = 5000;
  var TIMEOUT_MS = 5000;
  var SVG = 'http://www.w3.org/2000/svg';

  function $(id) { return document.getElementById(id); }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) { e.textContent = String(text); }
    return e;
  }

  function num(n) { return typeof n === 'number' && isFinite(n) ? n : 0; }
  function fmt(n) { return num(n).toLocaleString('en-US'); }
  function pct(r) { return (num(r) * 100).toLocaleString('en-US', { maximumFractionDigits: 4 }) + ' %'; }

  function budgetHref(name) { return '/budgets/' + encodeURIComponent(name); }

  function showError(message) {
    var e = $('error');
    e.textContent = message;
    e.hidden = !message;
  }

  // one request at a time: the next poll is scheduled only once this one has ended
  function getJson(url) {
    var controller = new AbortController();
    var timer = setTimeout(function () { controller.abort(); }, TIMEOUT_MS);
    return fetch(url, { headers: { Accept: 'application/json, application/problem+json' }, cache: 'no-store', signal: controller.signal })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (body) { return { status: r.status, body: body }; });
      })
      .finally(function () { clearTimeout(timer); });
  }

  function badge(kind, text) { return el('span', 'badge ' + kind, text); }

  function stateBadges(b) {
    var span = el('span', 'state');
    if (b.exhausted) {
      span.appendChild(badge('exhausted', 'EXHAUSTED'));
    } else {
      span.appendChild(badge('ok', 'ok'));
    }
    if (b.mode === 'shadow') {
      span.appendChild(document.createTextNode(' '));
      span.appendChild(badge('shadow', b.exhausted ? 'SHADOW: would deny, not enforced' : 'SHADOW: not enforced'));
    }
    return span;
  }

  function bar(b) {
    var wrap = el('div', 'bar-wrap');
    var outer = el('div', 'bar' + (b.exhausted ? ' exhausted' : '') + (b.mode === 'shadow' ? ' shadow' : ''));
    var fill = el('div', 'fill');
    var allowance = num(b.allowance);
    var used = allowance > 0 ? Math.min(1, num(b.retries) / allowance) : (num(b.retries) > 0 ? 1 : 0);
    fill.style.width = (used * 100).toFixed(1) + '%';
    outer.appendChild(fill);
    outer.setAttribute('role', 'meter');
    outer.setAttribute('aria-valuemin', '0');
    outer.setAttribute('aria-valuemax', String(allowance));
    outer.setAttribute('aria-valuenow', String(num(b.retries)));
    wrap.appendChild(outer);
    wrap.appendChild(el('span', 'bar-label', fmt(b.retries) + ' / ' + fmt(allowance) + ' retries, '
        + fmt(b.remaining) + ' available now'));
    return wrap;
  }

  // ---- the list of every budget ----
  function onlyExhausted() { return $('only-exhausted').checked; }

  function renderList(body) {
    var rows = [];
    var budgets = Array.isArray(body.budgets) ? body.budgets : [];
    var exhausted = 0;
    budgets.forEach(function (b) {
      if (b.exhausted) { exhausted++; }
      var tr = el('tr', b.exhausted ? 'exhausted' : 'ok');
      tr.dataset.budget = String(b.name);
      tr.dataset.state = b.exhausted ? 'exhausted' : 'ok';
      tr.dataset.mode = String(b.mode);
      var name = el('td', 'name');
      var a = el('a', null, b.name);
      a.href = budgetHref(String(b.name));
      name.appendChild(a);
      tr.appendChild(name);
      var mode = el('td');
      mode.appendChild(badge(b.mode === 'shadow' ? 'shadow' : 'enforce', b.mode));
      tr.appendChild(mode);
      tr.appendChild(el('td', 'num', pct(b.ratio)));
      var usage = el('td');
      usage.appendChild(bar(b));
      tr.appendChild(usage);
      var state = el('td');
      state.appendChild(stateBadges(b));
      tr.appendChild(state);
      tr.appendChild(el('td', 'num', fmt(b.requests)));
      tr.appendChild(el('td', 'num', fmt(b.denied)));
      tr.appendChild(el('td', 'num', fmt(b.active_clients)));
      rows.push(tr);
    });
    $('budgets').tBodies[0].replaceChildren.apply($('budgets').tBodies[0], rows);
    var empty = $('empty');
    empty.hidden = budgets.length > 0;
    empty.textContent = onlyExhausted() ? 'No budget is exhausted.' : 'No budgets yet: create one with PUT /v1/budgets/{name}.';
    $('counts').textContent = budgets.length + (onlyExhausted() ? ' exhausted' : ' budgets, ' + exhausted + ' exhausted');
    $('truncated').hidden = body.truncated !== true;
    var broken = Array.isArray(body.broken) ? body.broken : [];
    $('broken-section').hidden = broken.length === 0;
    $('broken').replaceChildren.apply($('broken'), broken.map(function (x) {
      return el('li', null, String(x.name) + ': ' + String(x.error));
    }));
  }

  function listUrl() { return '/v1/budgets' + (onlyExhausted() ? '?exhausted=true' : ''); }

  function ok(r) {
    // errors are RFC 9457 problems: detail says what went wrong
    if (r.status !== 200) { throw new Error(r.body && r.body.detail ? r.body.detail : 'HTTP ' + r.status); }
    return r.body;
  }

  // ---- one budget ----
  function fact(dl, term, value) {
    dl.appendChild(el('dt', null, term));
    dl.appendChild(el('dd', null, value));
  }

  function renderChart(b) {
    var chart = $('chart');
    var buckets = Array.isArray(b.buckets) ? b.buckets : [];
    var W = 640, H = 220, left = 44, right = 8, top = 10, bottom = 28;
    var max = 1;
    buckets.forEach(function (k) { max = Math.max(max, num(k.requests), num(k.retries), num(k.denied)); });
    var parts = [];
    parts.push(svg('line', { x1: left, y1: H - bottom, x2: W - right, y2: H - bottom, 'class': 'axis' }));
    parts.push(svg('line', { x1: left, y1: top, x2: left, y2: H - bottom, 'class': 'axis' }));
    parts.push(svg('text', { x: left - 4, y: top + 10, 'text-anchor': 'end' }, fmt(max)));
    parts.push(svg('text', { x: left - 4, y: H - bottom, 'text-anchor': 'end' }, '0'));
    var n = Math.max(1, buckets.length);
    var slot = (W - left - right) / n;
    var bw = Math.max(2, (slot - 6) / 3);
    var series = [['requests', 's-req'], ['retries', 's-ret'], ['denied', 's-den']];
    buckets.forEach(function (k, i) {
      series.forEach(function (s, j) {
        var v = num(k[s[0]]);
        var h = (H - top - bottom) * v / max;
        var rect = svg('rect', { x: (left + i * slot + 3 + j * bw).toFixed(1), y: (H - bottom - h).toFixed(1),
          width: bw.toFixed(1), height: h.toFixed(1), 'class': s[1] });
        rect.appendChild(svg('title', {}, s[0] + ': ' + fmt(v)));
        parts.push(rect);
      });
      var age = Math.round((num(b.now_ms) - num(k.start_ms)) / 1000);
      parts.push(svg('text', { x: (left + i * slot + slot / 2).toFixed(1), y: H - bottom + 16, 'text-anchor': 'middle' },
        i === buckets.length - 1 ? 'now' : '-' + age + 's'));
    });
    chart.replaceChildren.apply(chart, parts);
    var rows = buckets.map(function (k, i) {
      var tr = el('tr');
      var age = (num(b.now_ms) - num(k.start_ms)) / 1000;
      tr.appendChild(el('td', null, i === buckets.length - 1 ? 'now (filling)' : age.toFixed(1) + ' s ago'));
      tr.appendChild(el('td', 'num', fmt(k.requests)));
      tr.appendChild(el('td', 'num', fmt(k.retries)));
      tr.appendChild(el('td', 'num', fmt(k.denied)));
      return tr;
    });
    $('d-buckets').tBodies[0].replaceChildren.apply($('d-buckets').tBodies[0], rows);
  }

  function renderDetail(b) {
    $('d-name').textContent = b.name;
    var state = $('d-state');
    state.replaceChildren(badge(b.mode === 'shadow' ? 'shadow' : 'enforce', b.mode), document.createTextNode(' '),
      stateBadges(b));
    state.dataset.state = b.exhausted ? 'exhausted' : 'ok';
    $('d-bar').replaceChildren(bar(b));
    var dl = $('d-facts');
    dl.replaceChildren();
    fact(dl, 'Ratio', pct(b.ratio) + ' of first attempts');
    fact(dl, 'Floor', fmt(b.min_retries_per_second) + ' retries/s');
    fact(dl, 'Window', fmt(b.window_seconds) + ' s (' + fmt(b.bucket_ms) + ' ms buckets)');
    fact(dl, 'First attempts', fmt(b.requests));
    fact(dl, 'Retries granted', fmt(b.retries));
    fact(dl, 'Retries denied', fmt(b.denied));
    fact(dl, 'Allowance', fmt(b.allowance));
    fact(dl, 'Remaining', fmt(b.remaining));
    fact(dl, 'Retry ratio', pct(b.retry_ratio));
    fact(dl, 'SDK clients', fmt(b.active_clients));
    renderChart(b);
  }

  // ---- the loop: one request at a time; a poll started before the filter changed draws nothing ----
  var timer = null;
  var generation = 0;
  function loop(url, render) {
    var mine = ++generation;
    clearTimeout(timer);
    getJson(url()).then(ok).then(function (body) {
      if (mine !== generation) { return; }
      render(body);
      showError('');
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString('en-GB');
      timer = setTimeout(function () { loop(url, render); }, POLL_MS);
    }).catch(function (e) {
      if (mine !== generation) { return; }
      showError('Cannot read the coordinator: ' + (e && e.name === 'AbortError'
        ? 'no answer within ' + TIMEOUT_MS / 1000 + ' s' : String(e && e.message)));
      timer = setTimeout(function () { loop(url, render); }, RETRY_MS);
    });
  }

  function start() {
    var path = window.location.pathname;
    if (path.indexOf('/budgets/') === 0) {
      var name;
      try { name = decodeURIComponent(path.substring('/budgets/'.length)); } catch (e) { name = ''; }
      $('detail-view').hidden = false;
      document.title = name + ' - retry budget';
      loop(function () { return '/v1/budgets/' + encodeURIComponent(name); }, renderDetail);
      return;
    }
    $('list-view').hidden = false;
    var box = $('only-exhausted');
    box.checked = new URLSearchParams(window.location.search).get('exhausted') === 'true';
    box.addEventListener('change', function () {
      window.history.replaceState(null, '', onlyExhausted() ? '/?exhausted=true' : '/');
      loop(listUrl, renderList);
    });
    loop(listUrl, renderList);
  }

  start();
})();
