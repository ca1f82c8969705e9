// Shared by the rankings page and the badge, after i18n.js: a row's movement
// (docs/rankings.md, "Movement" and "Live movement") as the mark shown beside its rank (▲3,
// ▼2, –, NEW), which screen readers skip, and the words they say instead, in the page's
// language and by the period ("up 3 places since yesterday"; on a live board since the
// snapshot's time, "since 14:00"). `row` is the read's row (its movement and previousAt), `t`
// the page's string lookup, `number` its Intl number format and `time` its Intl time format.
// Null when there is nothing to show: no movement (the all-time board, a live board before
// its first snapshot), or a kind this script does not know.
window.LINEUP_MOVE = (row, period, t, number, time) => {
  'use strict';
  const movement = row.movement;
  const kind = movement && movement.kind;
  const at = row.previousAt ? new Date(row.previousAt) : null;
  // Without words for "since" the words say the move alone.
  const since = ['daily', 'weekly', 'monthly'].includes(period) ? t('rank.since.' + period)
    : at && !Number.isNaN(at.getTime()) ? t('rank.since.snapshot', { time: time(at) }) : '';
  const say = (key, vars) => t(key, { since, ...vars }).trim();
  if ((kind === 'up' || kind === 'down') && movement.by > 0) {
    const n = number(movement.by);
    const words = say('rank.move.' + kind + (movement.by === 1 ? '.one' : ''), { n });
    return { kind, mark: (kind === 'up' ? '▲' : '▼') + n, words };
  }
  if (kind === 'same') return { kind, mark: '–', words: say('rank.move.same') };
  if (kind === 'new') return { kind, mark: t('rank.move.new.mark'), words: t('rank.move.new') };
  return null;
};
