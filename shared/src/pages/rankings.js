// The rankings page. LINEUP_LANGUAGES and i18n.js are prepended by the server; the chosen
// language's string table is loaded before the first draw.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const PERIODS = ['daily', 'weekly', 'monthly', 'all-time', 'last-24h', 'last-7d', 'trending'];
  const REFRESH_MS = 5000;

  const I18N = window.LINEUP_I18N;
  let lang = I18N.pick();
  const t = (k, vars) => I18N.text(lang, k, vars);
  const locale = () => I18N.locale(lang);

  const params = new URLSearchParams(location.search);
  let period = PERIODS.includes(params.get('period')) ? params.get('period') : 'daily';
  let genre = params.get('genre') || '';
  let timer = null;
  let reads = 0;
  let shown = '';

  function tabs() {
    const list = $('tabs');
    list.setAttribute('aria-label', t('rank.periods'));
    list.replaceChildren(...PERIODS.map((p) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.role = 'tab';
      b.id = 'tab-' + p;
      b.textContent = t('rank.' + p);
      b.setAttribute('aria-selected', String(p === period));
      b.tabIndex = p === period ? 0 : -1;
      b.setAttribute('aria-controls', 'panel');
      b.addEventListener('click', () => choose(p));
      return b;
    }));
    $('panel').setAttribute('aria-labelledby', 'tab-' + period);
  }

  // Arrow keys move between tabs, as the ARIA tabs pattern has it.
  $('tabs').addEventListener('keydown', (e) => {
    const i = PERIODS.indexOf(period);
    const step = { ArrowRight: 1, ArrowLeft: -1, Home: -i, End: PERIODS.length - 1 - i }[e.key];
    if (step === undefined) return;
    e.preventDefault();
    choose(PERIODS[(i + step + PERIODS.length) % PERIODS.length]);
    $('tab-' + period).focus();
  });

  function choose(p) {
    period = p;
    shown = '';
    tabs();
    refresh();
  }

  function texts() {
    document.documentElement.lang = lang;
    document.title = t('rank.title');
    for (const n of document.querySelectorAll('[data-t]')) n.textContent = t(n.dataset.t);
    $('genre').placeholder = t('rank.genre.all');
    tabs();
  }

  function cell(text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }

  // The rank, and beside it how the row moved since the bucket before: the mark (▲3, ▼2, –,
  // NEW) is hidden from screen readers, which read the words instead.
  function rank(text, row) {
    const td = cell(text, 'rank');
    const move = window.LINEUP_MOVE(row, period, t, (n) => new Intl.NumberFormat(locale()).format(n),
      (at) => new Intl.DateTimeFormat(locale(), { hour: 'numeric', minute: '2-digit' }).format(at));
    if (!move) return td;
    const mark = document.createElement('span');
    mark.className = 'move ' + move.kind;
    mark.setAttribute('aria-hidden', 'true');
    mark.textContent = move.mark;
    const words = document.createElement('span');
    words.className = 'sr';
    words.textContent = move.words;
    td.append(' ', mark, ' ', words);
    return td;
  }

  // Rows are rebuilt only when the board changed, so a refresh does not flicker.
  function draw(board) {
    const key = JSON.stringify([lang, board.items]);
    if (key === shown) return;
    shown = key;
    const ranks = board.items.map((i) => i.rank);
    const rows = board.items.map((item, n) => {
      const tr = document.createElement('tr');
      const tied = ranks.indexOf(item.rank) !== n || ranks.lastIndexOf(item.rank) !== n;
      tr.append(
        rank(tied ? item.rank + ' (' + t('rank.tie') + ')' : String(item.rank), item),
        cell(item.title || item.concertId),
        cell(new Intl.NumberFormat(locale()).format(item.score), 'num'),
        cell(item.rate == null ? '–' : new Intl.NumberFormat(locale(), { style: 'percent', maximumFractionDigits: 1 }).format(item.rate), 'num'));
      return tr;
    });
    $('rows').replaceChildren(...rows);
    $('empty').hidden = rows.length > 0;
    $('panel').classList.remove('skeleton');
    $('panel').removeAttribute('aria-busy');
  }

  // One read at a time: a read answered after a newer one began (another tab, genre or
  // language) is dropped, so it neither draws the old board nor starts a second timer.
  async function refresh() {
    clearTimeout(timer);
    const asked = ++reads;
    const query = new URLSearchParams({ limit: '10' });
    if (genre) query.set('genre', genre);
    let wait = REFRESH_MS;
    let failed = false;
    let board = null;
    try {
      const r = await fetch('rankings/' + period + '?' + query, { headers: { accept: 'application/json' } });
      if (r.ok) board = await r.json();
      else {
        const after = Number(r.headers.get('retry-after'));
        if (after > 0) wait = Math.min(60000, after * 1000);
        if (r.status < 500 && r.status !== 429) board = { items: [] };
        else failed = true;
      }
    } catch (e) {
      failed = true;
    }
    if (asked !== reads) return;
    if (failed) {
      $('notice').hidden = false;
      $('notice').textContent = t('rank.error');
    } else {
      draw(board);
      $('notice').hidden = true;
      $('updated').textContent = t('rank.updated', {
        t: new Intl.DateTimeFormat(locale(), { timeStyle: 'medium' }).format(new Date()),
      });
    }
    timer = setTimeout(refresh, wait);
  }

  // The language menu, each language in its own words; a choice loads its table first.
  function languages() {
    const select = $('lang');
    for (const [l, name] of Object.entries(I18N.names)) {
      const o = document.createElement('option');
      o.value = l;
      o.lang = l;
      o.textContent = name;
      select.append(o);
    }
    select.value = lang;
    select.addEventListener('change', async () => {
      I18N.keep(select.value);
      lang = await I18N.load(select.value);
      select.value = lang;
      shown = '';
      texts();
      refresh();
    });
  }

  // The skeleton stays until the strings come.
  I18N.load(lang).then((loaded) => {
    lang = loaded;
    languages();
    const input = $('genre');
    input.value = genre;
    input.addEventListener('change', () => {
      genre = input.value.trim();
      shown = '';
      refresh();
    });
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') refresh();
    });
    texts();
    refresh();
  });
})();
