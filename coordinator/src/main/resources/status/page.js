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

  // Admission is paced: what decides is the balance (at most half a second of its refill rate), not
  // what is left of the window's allowance; the bar shows the balance against its cap.
  function available(b) {
    return fmt(b.remaining) + ' of ' + fmt(b.balance_cap) + ' available now, refills '
        + RetryBudgetChart.rate(b.refill_per_second) + '/s';
  }

  function windowUse(b) {
    return fmt(b.retries) + ' of ' + fmt(b.allowance) + ' retries in ' + fmt(b.window_seconds) + ' s';
  }

  function nextPermit(b) {
    var ms = b.next_grant_ms;
    if (typeof ms !== 'number' || ms < 0) { return 'not by itself (no first attempts and no floor)'; }
    return ms === 0 ? 'now' : 'in ' + (ms < 1000 ? ms + ' ms' : (ms / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 }) + ' s');
  }

  // Why a budget is exhausted or not, in words (the badge's tooltip and the detail view's text).
  function explain(b) {
    var pace = 'The paced balance holds ' + fmt(b.remaining) + ' of at most ' + fmt(b.balance_cap)
        + ' permits (half a second of its refill rate, ' + RetryBudgetChart.rate(b.refill_per_second) + '/s). ';
    var head = b.exhausted ? 'No retry can be granted now: the next permit comes ' + nextPermit(b) + '. '
        : 'Retries are granted now. ';
    return head + pace + 'The window allows ' + fmt(b.allowance) + ' retries in ' + fmt(b.window_seconds) + ' s ('
        + fmt(b.retries) + ' granted): pacing spreads them over the window instead of granting them in one burst.'
        + (b.mode === 'shadow' ? ' Shadow mode: nothing is refused, refusals are only counted.' : '');
  }

  function bar(b) {
    var wrap = el('div', 'bar-wrap');
    var outer = el('div', 'bar' + (b.exhausted ? ' exhausted' : '') + (b.mode === 'shadow' ? ' shadow' : ''));
    var fill = el('div', 'fill');
    var cap = num(b.balance_cap);
    var held = cap > 0 ? Math.min(1, num(b.remaining) / cap) : 0;
    fill.style.width = (held * 100).toFixed(1) + '%';
    outer.appendChild(fill);
    outer.setAttribute('role', 'meter');
    outer.setAttribute('aria-label', 'permits available now');
    outer.setAttribute('aria-valuemin', '0');
    outer.setAttribute('aria-valuemax', String(cap));
    outer.setAttribute('aria-valuenow', String(num(b.remaining)));
    wrap.appendChild(outer);
    wrap.appendChild(el('span', 'bar-label', available(b)));
    return wrap;
  }

  // the charts' histories, by budget name (kept while the page is open)
  var histories = {};
  function historyOf(b) {
    var name = String(b.name);
    if (!Object.prototype.hasOwnProperty.call(histories, name)) { histories[name] = new RetryBudgetChart.History(); }
    histories[name].add(b);
    return histories[name];
  }

  function spark(b) {
    var s = svg('svg', { 'class': 'spark', viewBox: '0 0 140 34', width: 140, height: 34, role: 'img',
      'aria-label': 'last 60 s: first attempts, retries granted and denied per second' });
    RetryBudgetChart.draw(s, historyOf(b), { width: 140, height: 34, axes: false });
    return s;
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
      tr.appendChild(el('td', 'window', windowUse(b)));
      var chart = el('td', 'chart');
      chart.appendChild(spark(b));
      tr.appendChild(chart);
      var state = el('td');
      state.appendChild(stateBadges(b));
      state.title = explain(b);
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

  function listUrl() { return '/v1/budgets?buckets=true' + (onlyExhausted() ? '&exhausted=true' : ''); }

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
    var buckets = Array.isArray(b.buckets) ? b.buckets : [];
    RetryBudgetChart.draw($('chart'), historyOf(b), { width: 640, height: 220, axes: true });
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
    $('d-explain').textContent = explain(b);
    var dl = $('d-facts');
    dl.replaceChildren();
    fact(dl, 'Available now', fmt(b.remaining) + ' of ' + fmt(b.balance_cap));
    fact(dl, 'Refill rate', RetryBudgetChart.rate(b.refill_per_second) + ' permits/s');
    fact(dl, 'Next permit', nextPermit(b));
    fact(dl, 'Ratio', pct(b.ratio) + ' of first attempts');
    fact(dl, 'Floor', fmt(b.min_retries_per_second) + ' retries/s');
    fact(dl, 'Window', fmt(b.window_seconds) + ' s (' + fmt(b.bucket_ms) + ' ms buckets)');
    fact(dl, 'Window allowance', fmt(b.allowance) + ' retries');
    fact(dl, 'Retries granted', fmt(b.retries));
    fact(dl, 'Retries denied', fmt(b.denied));
    fact(dl, 'First attempts', fmt(b.requests));
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
