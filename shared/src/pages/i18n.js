// Shared by both pages, after LINEUP_STRINGS: the language a page opens in (?lang=, else the
// one chosen before on either page, else the browser's), keeping a choice, and a string in a
// language with its {placeholders} filled.
window.LINEUP_I18N = (() => {
  'use strict';
  const S = window.LINEUP_STRINGS;
  const KEY = 'lineup:lang';
  return {
    pick() {
      let saved = null;
      try { saved = localStorage.getItem(KEY); } catch (e) { /* private mode */ }
      for (const c of [new URLSearchParams(location.search).get('lang'), saved, ...(navigator.languages || [])]) {
        const l = c && String(c).toLowerCase().split('-')[0];
        if (l && S[l]) return l;
      }
      return 'en';
    },
    keep(lang) {
      try { localStorage.setItem(KEY, lang); } catch (e) { /* private mode */ }
    },
    text(lang, k, vars) {
      let s = (S[lang] && S[lang][k]) || S.en[k] || k;
      for (const [n, v] of Object.entries(vars || {})) s = s.split('{' + n + '}').join(String(v));
      return s;
    },
  };
})();
