// The rank badge a concert's page on the booking site (its own origin) embeds
// (docs/pages.md, "A concert's rank badge"):
//   <span data-lineup-rank="iu-seoul-2026" hidden></span>
//   <script src="https://<api>/rankings/assets/badge.js" data-period="daily" defer></script>
// Each element with data-lineup-rank gets its concert's rank on the board ("Daily #3"), the
// movement's mark beside it, which screen readers skip, and words they read instead. A
// concert not on the board leaves its element hidden. All the page's concerts are one read
// of GET rankings/{period}/concerts?ids= (ids sorted, so every page asks the same URL), in
// the page's language (data-lang, else <html lang>, else the browser's). LINEUP_LANGUAGES,
// i18n.js and movement.js are prepended by the server. LINEUP_BADGES.render() fills elements
// added later.
window.LINEUP_BADGES = (() => {
  'use strict';
  const PERIODS = ['daily', 'weekly', 'monthly', 'all-time', 'last-24h', 'last-7d', 'trending'];
  const script = document.currentScript;
  const options = (script && script.dataset) || {};
  const base = (script && script.src) || location.href;
  const period = PERIODS.includes(options.period) ? options.period : 'daily';
  const I18N = window.LINEUP_I18N;
  // Read by screen readers, unseen; set through the CSSOM, which the site's CSP allows.
  const UNSEEN = {
    position: 'absolute', width: '1px', height: '1px', overflow: 'hidden',
    clip: 'rect(0 0 0 0)', whiteSpace: 'nowrap',
  };

  function span(text, className) {
    const s = document.createElement('span');
    s.textContent = text;
    if (className) s.className = className;
    return s;
  }

  // The standing of each id, in reads of at most 100 ids; a failed read leaves its ids out.
  async function standings(ids) {
    const found = {};
    for (let i = 0; i < ids.length; i += 100) {
      const query = new URLSearchParams({ ids: ids.slice(i, i + 100).join(',') });
      if (options.genre) query.set('genre', options.genre);
      try {
        const r = await fetch(new URL('../' + period + '/concerts?' + query, base), { headers: { accept: 'application/json' } });
        if (!r.ok) continue;
        for (const c of (await r.json()).concerts) found[c.concertId] = c;
      } catch (e) { /* the badges stay hidden */ }
    }
    return found;
  }

  async function render() {
    const slots = [...document.querySelectorAll('[data-lineup-rank]')];
    // Only well-formed ids: one malformed id would make the whole read a 400.
    const ids = [...new Set(slots.map((s) => s.dataset.lineupRank))]
      .filter((id) => /^[A-Za-z0-9._:-]{1,64}$/.test(id)).sort();
    if (ids.length === 0) return;
    const lang = await I18N.load(I18N.match(options.lang) || I18N.match(document.documentElement.lang) || I18N.pick());
    const t = (k, vars) => I18N.text(lang, k, vars);
    const number = (n) => new Intl.NumberFormat(I18N.locale(lang)).format(n);
    const time = (at) => new Intl.DateTimeFormat(I18N.locale(lang), { hour: 'numeric', minute: '2-digit' }).format(at);
    const found = await standings(ids);
    for (const slot of slots) {
      const c = found[slot.dataset.lineupRank];
      slot.hidden = !(c && c.onBoard);
      if (slot.hidden) {
        slot.replaceChildren();
        continue;
      }
      slot.lang = lang;
      slot.replaceChildren(t('rank.badge', { period: t('rank.' + period), n: number(c.rank) }));
      const move = window.LINEUP_MOVE(c, period, t, number, time);
      if (move) {
        const mark = span(move.mark, 'lineup-move lineup-' + move.kind);
        mark.setAttribute('aria-hidden', 'true');
        const words = span(move.words);
        Object.assign(words.style, UNSEEN);
        slot.append(' ', mark, ' ', words);
      }
    }
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => render());
  else render();
  return { render };
})();
