// The Tabula console: one page over the console's JSON API (/api/, whose contract is written
// in internal/console/api.go). Plain DOM and no framework; everything it needs is in the
// binary. Every value shown comes from the service and is put in the page as text, never as
// HTML.
'use strict';

// ---- DOM helpers ---------------------------------------------------------------------------

const $ = (sel, root = document) => root.querySelector(sel);

// h builds an element: h('a', {href: '#/x', class: 'c', onclick: f}, 'text', child, ...).
// Strings become text nodes; null, undefined and false children are skipped.
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  let value;
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'value') value = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  if (value !== undefined) el.value = value;
  return el;
}

const fmt = new Intl.NumberFormat('en');
const n = (x) => fmt.format(x);

// ---- the API -------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const session = {
  account: null,
  key: null,
  accounts: [],
  services: [],
  development: null,
  save() {
    sessionStorage.setItem('tabula.console', JSON.stringify({ account: this.account, key: this.key }));
  },
  restore() {
    try {
      const s = JSON.parse(sessionStorage.getItem('tabula.console') || 'null');
      if (s && s.account && s.key) Object.assign(this, { account: s.account, key: s.key });
    } catch (_) { /* a damaged entry is as good as none */ }
  },
  forget() {
    this.account = this.key = null;
    sessionStorage.removeItem('tabula.console');
  },
  has(service) { return this.services.includes(service); },
};

function basic(account, key) {
  const bytes = new TextEncoder().encode(account + ':' + key);
  return 'Basic ' + btoa(String.fromCharCode(...bytes));
}

// api calls the console's API and returns the decoded JSON (null for 204). A refusal throws
// an ApiError carrying the status, Azure's code and message.
async function api(method, path, { query, body, raw } = {}) {
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v != null && v !== '') q.set(k, v);
    const s = q.toString();
    if (s) url += '?' + s;
  }
  const headers = {};
  if (session.account) headers.Authorization = basic(session.account, session.key);
  let payload;
  if (body instanceof Blob) {
    payload = body;
  } else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(url, { method, headers, body: payload, credentials: 'omit', cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'NoAnswer', 'The console did not answer: is Tabula still running? (' + e.message + ')');
  }
  if (raw && resp.ok) return resp;
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { /* not JSON: shown as text */ }
  if (!resp.ok) {
    const e = data && data.error;
    throw new ApiError(resp.status, (e && e.code) || 'HTTP' + resp.status, (e && e.message) || text || resp.statusText);
  }
  return data;
}

const accountPath = () => '/api/accounts/' + encodeURIComponent(session.account);

// ---- feedback: errors, loading, notices ----------------------------------------------------

// errorBox shows a failure as the service gave it: status, Azure code, message.
function errorBox(e) {
  if (!(e instanceof ApiError)) e = new ApiError(0, 'Error', String(e && e.message || e));
  return h('div', { class: 'error', role: 'alert' },
    h('strong', { class: 'code' }, (e.status ? e.status + ' ' : '') + e.code),
    h('span', { class: 'message' }, e.message));
}

function notice(text) { return h('div', { class: 'notice', role: 'status' }, text); }

function spinner(text = 'Loading…') { return h('div', { class: 'loading' }, h('span', { class: 'spin' }), text); }

// busy disables a button while promise runs and shows it is working.
async function busy(button, promise) {
  const label = button.textContent;
  button.disabled = true;
  button.classList.add('busy');
  try { return await promise; } finally {
    button.disabled = false;
    button.classList.remove('busy');
    button.textContent = label;
  }
}

// put replaces what el holds, skipping null, undefined and false.
function put(el, ...nodes) { el.replaceChildren(...nodes.flat(Infinity).filter((x) => x != null && x !== false)); }

// showIn replaces what box holds: an error, a notice, or nothing.
const showIn = put;

// A 401 from any call means the key is no longer good (rotated, or the server restarted with
// other accounts): back to the sign-in form, saying why.
async function guarded(promise) {
  try { return await promise; } catch (e) {
    if (e instanceof ApiError && e.status === 401) signIn(e);
    throw e;
  }
}

// ---- navigation ----------------------------------------------------------------------------

let viewSeq = 0;     // bumped on every navigation: late answers of a page left are dropped
let leaving = [];    // what to stop when the page changes (refresh timers)

function route() {
  for (const stop of leaving) stop();
  leaving = [];
  const seq = ++viewSeq;
  const [path, qs] = (location.hash.slice(1) || '/').split('?');
  const q = new URLSearchParams(qs || '');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  renderSide(parts[0] || '');
  const main = $('#main');
  main.replaceChildren();
  if (!session.account) return;
  const [section, name, sub] = parts;
  switch (section) {
    case 'tables':
      if (!session.has('table')) break;
      if (!name) return resourcesPane(main, seq, 'tables');
      if (sub === 'entity') return entityPane(main, seq, name, q);
      return tablePane(main, seq, name, q);
    case 'containers':
      if (!session.has('blob')) break;
      if (!name) return resourcesPane(main, seq, 'containers');
      return containerPane(main, seq, name, q);
    case 'queues':
      if (!session.has('queue')) break;
      if (!name) return resourcesPane(main, seq, 'queues');
      return queuePane(main, seq, name);
    case 'insights': return insightsPane(main, seq);
    case 'faults': return faultsPane(main, seq);
  }
  location.replace('#/' + (session.has('table') ? 'tables' : 'insights'));
}

function go(hash) {
  if (location.hash === hash) route(); else location.hash = hash;
}

function href(...parts) {
  return '#/' + parts.map(encodeURIComponent).join('/');
}

function renderSide(active) {
  const side = $('#side');
  if (!session.account) { side.replaceChildren(); return; }
  // A click on the section shown shows it afresh (the hash does not change, so no hashchange).
  const link = (key, label, hint) => h('a', {
    href: '#/' + key, class: active === key ? 'active' : null, title: hint,
    onclick: () => { if (location.hash === '#/' + key) route(); },
  }, label);
  put(side,
    h('div', { class: 'side-head' }, 'Account'),
    h('div', { class: 'side-account' }, session.account),
    session.has('table') && link('tables', 'Tables', 'The Table service: tables and entities'),
    session.has('blob') && link('containers', 'Containers', 'The Blob service: containers and blobs'),
    session.has('queue') && link('queues', 'Queues', 'The Queue service: queues and messages'),
    h('div', { class: 'side-head' }, 'Operator'),
    link('insights', 'Design guide', "What Azure's design guide would warn about in this workload"),
    link('faults', 'Fault rules', 'Requests that fail on purpose'),
  );
}

function crumbs(...items) {
  const out = h('nav', { class: 'crumbs', 'aria-label': 'Where you are' }, h('span', {}, session.account));
  for (const [label, link] of items) {
    out.append(h('span', { class: 'sep' }, '›'), link ? h('a', { href: link }, label) : h('span', {}, label));
  }
  return out;
}

// ---- paging --------------------------------------------------------------------------------

// pager pages through a listing whose calls return {next}: load(token) fetches one page and
// returns how many items it holds. It says where you are (page, items shown, last page).
function pager(unit, load) {
  const tokens = [''];
  const firsts = [0];
  let at = 0;
  const prev = h('button', { type: 'button', class: 'pager-prev', disabled: true, onclick: () => show(at - 1) }, '‹ Previous');
  const next = h('button', { type: 'button', class: 'pager-next', disabled: true, onclick: () => show(at + 1) }, 'Next ›');
  const info = h('span', { class: 'pager-info' });
  const el = h('div', { class: 'pager' }, prev, info, next);
  async function show(i) {
    prev.disabled = next.disabled = true;
    info.textContent = 'Loading page ' + (i + 1) + '…';
    let page;
    try {
      page = await load(tokens[i]);
    } catch (e) {
      info.textContent = '';
      prev.disabled = at === 0;
      next.disabled = tokens.length <= at + 1;
      return;
    }
    if (!page) return;
    at = i;
    tokens.length = i + 1;
    firsts.length = i + 1;
    if (page.next) {
      tokens.push(page.next);
      firsts.push(firsts[i] + page.count);
    }
    const first = firsts[i];
    info.textContent = page.count === 0
      ? `Page ${i + 1} · no ${unit}${page.next ? ' on this page (more may follow)' : ''}`
      : `Page ${i + 1} · ${unit} ${n(first + 1)}–${n(first + page.count)}${page.next ? '' : ' · last page'}`;
    prev.disabled = i === 0;
    next.disabled = !page.next;
  }
  return { el, first: () => show(0), again: () => show(at) };
}

// ---- tables --------------------------------------------------------------------------------

// The resources of each service, listed by one pane of the same shape: a name per row, a
// form to create one, a button to delete one, pages of 50.
const resources = {
  tables: {
    title: 'Tables', noun: 'table', service: 'table',
    hint: '3 to 63 letters and digits, starting with a letter',
    gone: (n) => `Delete table ${n} and every entity in it?`,
    empty: 'No tables yet: create one above, or with any SDK.',
    columns: [], cells: () => [],
  },
  containers: {
    title: 'Containers', noun: 'container', service: 'blob',
    hint: '3 to 63 lower-case letters, digits and single hyphens',
    gone: (n) => `Delete container ${n} and every blob in it?`,
    empty: 'No containers yet: create one above, or with any SDK.',
    columns: ['Last modified', 'Lease'],
    cells: (c) => [h('td', { class: 'time' }, when(c.lastModified)), h('td', {}, c.lease)],
  },
  queues: {
    title: 'Queues', noun: 'queue', service: 'queue',
    hint: '3 to 63 lower-case letters, digits and single hyphens',
    gone: (n) => `Delete queue ${n} and every message in it?`,
    empty: 'No queues yet: create one above, or with any SDK.',
    columns: ['Messages (approximate)'],
    cells: (q) => [h('td', { class: 'num count' }, n(q.approximateMessageCount))],
  },
};

function when(t) { return t ? new Date(t).toLocaleString() : ''; }

function resourcesPane(main, seq, section) {
  const kind = resources[section];
  const box = h('div', { class: 'feedback' }); // what an action did
  const listBox = h('div', { class: 'feedback' }); // why the listing failed
  const rows = h('tbody');
  const width = 2 + kind.columns.length;
  const name = h('input', { id: 'new-' + kind.noun, placeholder: 'new ' + kind.noun + ' name', title: kind.hint, spellcheck: 'false' });
  const create = h('button', { class: 'primary', type: 'submit' }, 'Create ' + kind.noun);
  const list = pager(section, async (token) => {
    rows.replaceChildren(h('tr', {}, h('td', { colspan: width }, spinner())));
    try {
      const page = await guarded(api('GET', accountPath() + '/' + section, { query: { next: token, top: 50 } }));
      if (seq !== viewSeq) return null;
      const items = page[section];
      put(rows, items.map((t) => h('tr', {},
        h('td', {}, h('a', { href: href(section, t.name), class: 'item-link' }, t.name)),
        kind.cells(t),
        h('td', { class: 'row-actions' }, h('button', {
          type: 'button', class: 'danger quiet', onclick: (ev) => drop(ev.target, t.name),
        }, 'Delete')))));
      if (items.length === 0 && !token) put(rows, h('tr', {}, h('td', { colspan: width, class: 'muted' }, kind.empty)));
      showIn(listBox);
      return { count: items.length, next: page.next };
    } catch (e) {
      rows.replaceChildren();
      showIn(listBox, errorBox(e));
      throw e;
    }
  });
  async function drop(button, n) {
    if (!confirm(kind.gone(n))) return;
    try {
      await busy(button, guarded(api('DELETE', accountPath() + '/' + section + '/' + encodeURIComponent(n))));
      showIn(box, notice(`The ${kind.noun} ${n} is deleted.`));
      list.again();
    } catch (e) { showIn(box, errorBox(e)); }
  }
  const form = h('form', {
    class: 'inline-form', onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const made = await busy(create, guarded(api('POST', accountPath() + '/' + section, { body: { name: name.value } })));
        showIn(box, notice(`The ${kind.noun} ${made.name} is created.`));
        name.value = '';
        list.again();
      } catch (e) { showIn(box, errorBox(e)); }
    },
  }, name, create);
  main.append(
    crumbs([kind.title]),
    h('div', { class: 'pane-head' }, h('h1', {}, kind.title), form),
    box, listBox,
    h('table', { class: 'grid', id: section },
      h('thead', {}, h('tr', {}, h('th', {}, 'Name'), kind.columns.map((c) => h('th', {}, c)), h('th', {}))), rows),
    list.el,
  );
  list.first();
}

// The query plans, cheapest first, as the design guide ranks them.
const plans = {
  'point': 'Point query: PartitionKey and RowKey given, one entity read.',
  'partition-range': 'Within one partition: read only that partition (or a RowKey range of it).',
  'range': 'A PartitionKey range: several partitions read.',
  'table-scan': 'Table scan: no usable key condition, every entity is read.',
};

function tablePane(main, seq, table, q) {
  const filter = h('input', { id: 'q-filter', name: 'filter', value: q.get('filter') || '', placeholder: "PartitionKey eq 'eu' and Total gt 10", spellcheck: 'false' });
  const select = h('input', { id: 'q-select', name: 'select', value: q.get('select') || '', placeholder: 'all properties', spellcheck: 'false' });
  const top = h('input', { id: 'q-top', name: 'top', type: 'number', min: 1, max: 1000, value: q.get('top') || '20' });
  const run = h('button', { class: 'primary', type: 'submit', id: 'q-run' }, 'Run query');
  const form = h('form', {
    class: 'query', onsubmit: (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      if (filter.value.trim()) p.set('filter', filter.value.trim());
      if (select.value.trim()) p.set('select', select.value.trim());
      if (top.value && top.value !== '20') p.set('top', top.value);
      const s = p.toString();
      go(href('tables', table) + (s ? '?' + s : ''));
    },
  },
  h('label', { class: 'grow' }, h('span', {}, '$filter'), filter),
  h('label', {}, h('span', {}, '$select'), select),
  h('label', { class: 'narrow' }, h('span', {}, '$top'), top),
  h('div', { class: 'query-actions' }, run, h('a', { href: href('tables', table), class: 'quiet' }, 'Clear')));
  const box = h('div', { class: 'feedback' });
  const stats = h('div', { class: 'stats', id: 'q-stats' });
  const grid = h('div', { class: 'grid-wrap' });
  const list = pager('entities', async (token) => {
    grid.replaceChildren(spinner('Running the query…'));
    stats.replaceChildren();
    try {
      const page = await guarded(api('GET', accountPath() + '/tables/' + encodeURIComponent(table) + '/entities', {
        query: { filter: q.get('filter'), select: q.get('select'), top: q.get('top') || 20, next: token },
      }));
      if (seq !== viewSeq) return null;
      showIn(box);
      put(stats,
        h('span', { class: 'plan plan-' + page.plan, title: plans[page.plan] || '' }, page.plan),
        h('span', {}, 'scanned ', h('b', { id: 'q-scanned' }, n(page.scanned))),
        h('span', {}, 'returned ', h('b', { id: 'q-returned' }, n(page.returned))),
        page.returned > 0 && page.scanned > page.returned * 10
          ? h('span', { class: 'warn' }, `${n(Math.round(page.scanned / page.returned))}× more read than returned`) : null,
        h('span', { class: 'muted' }, plans[page.plan] || ''));
      grid.replaceChildren(entityGrid(table, page.entities));
      return { count: page.entities.length, next: page.next };
    } catch (e) {
      grid.replaceChildren();
      showIn(box, errorBox(e));
      throw e;
    }
  });
  main.append(
    crumbs(['Tables', '#/tables'], [table]),
    h('div', { class: 'pane-head' }, h('h1', {}, table),
      h('a', { class: 'button', href: href('tables', table, 'entity') + '?new=1', id: 'new-entity' }, 'New entity')),
    form, box, stats, grid, list.el,
  );
  list.first();
}

// entityGrid shows entities in rows: the keys, the Timestamp, then every property any of them
// has, in the order first seen; a cell's title gives the value's EDM type.
function entityGrid(table, entities) {
  if (entities.length === 0) return h('p', { class: 'muted empty' }, 'No entity matches.');
  const names = [];
  const seen = new Set();
  for (const e of entities) for (const p of e.properties) if (!seen.has(p.name)) { seen.add(p.name); names.push(p.name); }
  const rows = entities.map((e) => {
    const byName = new Map(e.properties.map((p) => [p.name, p]));
    const link = href('tables', table, 'entity') + '?' + new URLSearchParams({ pk: e.PartitionKey, rk: e.RowKey });
    return h('tr', { class: 'entity-row', 'data-pk': e.PartitionKey, 'data-rk': e.RowKey, onclick: () => go(link) },
      h('td', { class: 'key' }, h('a', { href: link }, e.PartitionKey || '(empty)')),
      h('td', { class: 'key' }, e.RowKey || '(empty)'),
      h('td', { class: 'time' }, e.Timestamp),
      names.map((name) => {
        const p = byName.get(name);
        return p ? h('td', { title: p.type, class: 't-' + p.type.slice(4).toLowerCase() }, clip(p.value)) : h('td', { class: 'absent' }, '');
      }));
  });
  return h('table', { class: 'grid entities', id: 'entities' },
    h('thead', {}, h('tr', {}, h('th', {}, 'PartitionKey'), h('th', {}, 'RowKey'), h('th', {}, 'Timestamp'), names.map((x) => h('th', {}, x)))),
    h('tbody', {}, rows));
}

function clip(s, max = 80) { return s.length > max ? s.slice(0, max) + '…' : s; }

const edmTypes = ['Edm.String', 'Edm.Boolean', 'Edm.Int32', 'Edm.Int64', 'Edm.Double', 'Edm.DateTime', 'Edm.Guid', 'Edm.Binary'];

// What each type's text looks like, for the value field's placeholder.
const typeHints = {
  'Edm.String': 'text',
  'Edm.Boolean': 'true or false',
  'Edm.Int32': 'a whole number, ±2,147,483,647',
  'Edm.Int64': 'a whole number, 64 bits',
  'Edm.Double': '3.14, 1e-7, NaN, Infinity',
  'Edm.DateTime': '2024-05-01T10:00:00Z',
  'Edm.Guid': '8-4-4-4-12 hex digits',
  'Edm.Binary': 'base64',
};

function entityPane(main, seq, table, q) {
  const isNew = q.has('new');
  const pk = q.get('pk');
  const rk = q.get('rk');
  const tableLink = href('tables', table);
  main.append(crumbs(['Tables', '#/tables'], [table, tableLink], [isNew ? 'New entity' : `(${pk}, ${rk})`]));
  if (isNew) {
    entityForm(main, table, { PartitionKey: '', RowKey: '', properties: [{ name: '', type: 'Edm.String', value: '' }] }, true);
    return;
  }
  const wait = spinner();
  main.append(wait);
  guarded(api('GET', accountPath() + '/tables/' + encodeURIComponent(table) + '/entity', { query: { pk, rk } }))
    .then((e) => { if (seq === viewSeq) { wait.remove(); entityForm(main, table, e, false); } })
    .catch((e) => { if (seq === viewSeq) wait.replaceWith(errorBox(e), h('p', {}, h('a', { href: tableLink }, '‹ Back to ' + table))); });
}

// entityForm edits one entity: its properties' names, EDM types and values. Save sends them to
// the service, whose decoder and limits judge them as an SDK's request would be judged; the
// etag it was read with makes a change made meanwhile a 412, not a silent overwrite.
function entityForm(main, table, entity, isNew) {
  const box = h('div', { class: 'feedback', id: 'entity-feedback' });
  const props = h('tbody', { id: 'props' });
  const pkIn = h('input', { id: 'e-pk', value: entity.PartitionKey, spellcheck: 'false', readonly: !isNew });
  const rkIn = h('input', { id: 'e-rk', value: entity.RowKey, spellcheck: 'false', readonly: !isNew });
  let etag = entity.etag;
  const meta = h('dl', { class: 'meta' });
  function showMeta(e) {
    meta.replaceChildren(...(isNew ? [] : [h('dt', {}, 'Timestamp'), h('dd', { id: 'e-timestamp' }, e.Timestamp), h('dt', {}, 'ETag'), h('dd', { id: 'e-etag' }, e.etag)]));
  }
  function propRow(p) {
    const name = h('input', { class: 'p-name', value: p.name, placeholder: 'Name', spellcheck: 'false', 'aria-label': 'Property name' });
    const type = h('select', { class: 'p-type', 'aria-label': 'EDM type' }, edmTypes.map((t) => h('option', { value: t }, t)));
    type.value = p.type;
    const value = h('input', { class: 'p-value', value: p.value, spellcheck: 'false', 'aria-label': 'Value', placeholder: typeHints[p.type] });
    type.addEventListener('change', () => { value.placeholder = typeHints[type.value]; });
    const row = h('tr', { class: 'prop' },
      h('td', {}, name), h('td', {}, type), h('td', { class: 'grow' }, value),
      h('td', {}, h('button', { type: 'button', class: 'quiet danger p-remove', title: 'Remove this property', onclick: () => row.remove() }, '✕')));
    return row;
  }
  function fill(e) {
    props.replaceChildren(...e.properties.map(propRow));
    showMeta(e);
  }
  function collect() {
    const out = [];
    for (const row of props.querySelectorAll('tr.prop')) {
      const name = $('.p-name', row).value;
      if (name === '' && $('.p-value', row).value === '') continue; // an empty row added and left
      if (name === 'Timestamp' || name.startsWith('odata.')) {
        throw new ApiError(0, 'PropertyNameReserved', `The service keeps ${name} for itself and would drop a property of that name.`);
      }
      out.push({ name, type: $('.p-type', row).value, value: $('.p-value', row).value });
    }
    return out;
  }
  const save = h('button', { class: 'primary', type: 'submit', id: 'e-save' }, isNew ? 'Insert entity' : 'Save changes');
  const del = !isNew && h('button', {
    type: 'button', class: 'danger', id: 'e-delete', onclick: async () => {
      if (!confirm('Delete this entity?')) return;
      try {
        await busy(del, guarded(api('DELETE', entityURL(), { query: { pk: entity.PartitionKey, rk: entity.RowKey, etag } })));
        go(href('tables', table));
      } catch (e) { showIn(box, errorBox(e)); }
    },
  }, 'Delete entity');
  const entityURL = () => accountPath() + '/tables/' + encodeURIComponent(table) + '/entity';
  const form = h('form', {
    class: 'entity card', id: 'entity-form', onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const properties = collect();
        if (isNew) {
          const stored = await busy(save, guarded(api('POST', accountPath() + '/tables/' + encodeURIComponent(table) + '/entities',
            { body: { PartitionKey: pkIn.value, RowKey: rkIn.value, properties } })));
          go(href('tables', table, 'entity') + '?' + new URLSearchParams({ pk: stored.PartitionKey, rk: stored.RowKey }));
          return;
        }
        const stored = await busy(save, guarded(api('PUT', entityURL(), { query: { pk: entity.PartitionKey, rk: entity.RowKey }, body: { etag, properties } })));
        etag = stored.etag;
        fill(stored);
        showIn(box, notice('Saved. The service stored what is shown, with a new ETag.'));
      } catch (e) { showIn(box, errorBox(e)); }
    },
  },
  h('div', { class: 'keys' },
    h('label', {}, h('span', {}, 'PartitionKey'), pkIn),
    h('label', {}, h('span', {}, 'RowKey'), rkIn),
    meta),
  h('table', { class: 'props' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Property'), h('th', {}, 'EDM type'), h('th', {}, 'Value'), h('th', {}))),
    props),
  h('div', { class: 'actions' },
    h('button', { type: 'button', id: 'e-add', onclick: () => { const r = propRow({ name: '', type: 'Edm.String', value: '' }); props.append(r); $('.p-name', r).focus(); } }, '+ Add property'),
    h('span', { class: 'spacer' }),
    del, save));
  fill(entity);
  main.append(h('div', { class: 'pane-head' }, h('h1', {}, isNew ? 'New entity in ' + table : 'Entity')), box, form);
}

// ---- blobs ---------------------------------------------------------------------------------

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let x = n;
  while (x >= 1024 && i < units.length - 1) { x /= 1024; i++; }
  return (i === 0 ? String(x) : x.toFixed(x < 10 ? 1 : 0)) + ' ' + units[i];
}

// blobBadges say what keeps a blob's bytes from being read: its Archive tier (and where it
// is being rehydrated to), a copy into it that is pending or did not succeed.
function blobBadges(b) {
  const badges = [];
  if (b.archiveStatus) badges.push(b.archiveStatus.replace('rehydrate-pending-to-', 'rehydrating to '));
  else if (b.accessTier === 'Archive') badges.push('archived');
  if (b.copyStatus) badges.push('copy ' + b.copyStatus);
  return badges.map((text) => [' ', h('span', { class: 'badge b-state' }, text)]);
}

// containerPane lists a container's blobs folder by folder ('/' delimits folders, as most
// tools show them), and uploads, downloads and deletes them.
function containerPane(main, seq, container, q) {
  const prefix = q.get('prefix') || '';
  const base = accountPath() + '/containers/' + encodeURIComponent(container);
  const here = (p) => href('containers', container) + (p ? '?' + new URLSearchParams({ prefix: p }) : '');
  const box = h('div', { class: 'feedback', id: 'blob-feedback' }); // what an action did
  const listBox = h('div', { class: 'feedback' }); // why the listing failed
  const rows = h('tbody');
  const list = pager('entries', async (token) => {
    rows.replaceChildren(h('tr', {}, h('td', { colspan: 5 }, spinner())));
    try {
      const page = await guarded(api('GET', base + '/blobs', { query: { prefix, delimiter: '/', next: token, top: 50 } }));
      if (seq !== viewSeq) return null;
      put(rows,
        page.prefixes.map((p) => h('tr', { class: 'folder' },
          h('td', { colspan: 5 }, h('a', { href: here(p) }, h('span', { class: 'badge' }, 'folder'), ' ', p.slice(prefix.length))))),
        page.blobs.map((b) => h('tr', { class: 'blob', 'data-name': b.name },
          h('td', { class: 'key' }, b.name.slice(prefix.length), blobBadges(b)),
          h('td', { class: 'num' }, bytes(b.size)),
          h('td', {}, b.contentType),
          h('td', { class: 'time' }, when(b.lastModified)),
          h('td', { class: 'row-actions' },
            h('button', { type: 'button', class: 'quiet b-download', onclick: (ev) => download(ev.target, b) }, 'Download'),
            h('button', { type: 'button', class: 'quiet danger b-delete', onclick: (ev) => remove(ev.target, b) }, 'Delete')))));
      if (page.prefixes.length + page.blobs.length === 0 && !token) {
        put(rows, h('tr', {}, h('td', { colspan: 5, class: 'muted' }, prefix ? 'Nothing under ' + prefix : 'No blobs yet: upload files above, or with any SDK.')));
      }
      showIn(listBox);
      return { count: page.prefixes.length + page.blobs.length, next: page.next };
    } catch (e) {
      rows.replaceChildren();
      showIn(listBox, errorBox(e));
      throw e;
    }
  });
  async function download(button, b) {
    try {
      const resp = await busy(button, guarded(api('GET', base + '/blob', { query: { name: b.name }, raw: true })));
      const url = URL.createObjectURL(await resp.blob());
      const a = h('a', { href: url, download: b.name.split('/').pop() });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (e) { showIn(box, errorBox(e)); }
  }
  async function remove(button, b) {
    if (!confirm(`Delete blob ${b.name}?`)) return;
    const del = (snapshots) => guarded(api('DELETE', base + '/blob', { query: { name: b.name, snapshots } }));
    try {
      try {
        await busy(button, del());
      } catch (e) {
        if (e.code !== 'SnapshotsPresent' || !confirm(`${b.name} has snapshots: delete them too?`)) throw e;
        await busy(button, del('include'));
      }
      showIn(box, notice(`Blob ${b.name} deleted.`));
      list.again();
    } catch (e) { showIn(box, errorBox(e)); }
  }
  const files = h('input', { type: 'file', id: 'b-files', multiple: true });
  const upload = h('button', { class: 'primary', type: 'submit', id: 'b-upload' }, 'Upload');
  const form = h('form', {
    class: 'inline-form upload', onsubmit: async (ev) => {
      ev.preventDefault();
      if (files.files.length === 0) { showIn(box, errorBox(new ApiError(0, 'NoFile', 'Choose one or more files to upload.'))); return; }
      const done = [];
      try {
        for (const file of files.files) {
          const name = prefix + file.name;
          showIn(box, h('div', { class: 'loading' }, h('span', { class: 'spin' }), `Uploading ${name} (${bytes(file.size)})…`));
          const put = (overwrite) => guarded(api('PUT', base + '/blob', { query: { name, overwrite }, body: file }));
          try {
            await busy(upload, put());
          } catch (e) {
            if (e.code !== 'BlobAlreadyExists' || !confirm(`${name} exists: replace it?`)) throw e;
            await busy(upload, put('true'));
          }
          done.push(name);
        }
        files.value = '';
        showIn(box, notice(`Uploaded ${done.join(', ')}.`));
      } catch (e) {
        showIn(box, done.length ? notice(`Uploaded ${done.join(', ')}.`) : null, errorBox(e));
      }
      list.again();
    },
  }, files, upload);
  // The folder path, each part a link.
  const trail = [['Containers', '#/containers'], [container, prefix ? here('') : null]];
  let at = '';
  for (const part of prefix.split('/').filter(Boolean)) {
    at += part + '/';
    trail.push([part + '/', at === prefix ? null : here(at)]);
  }
  main.append(
    crumbs(...trail),
    h('div', { class: 'pane-head' }, h('h1', {}, container + (prefix ? ' / ' + prefix : '')), form),
    box, listBox,
    h('table', { class: 'grid', id: 'blobs' },
      h('thead', {}, h('tr', {}, ['Name', 'Size', 'Content type', 'Last modified', ''].map((x) => h('th', {}, x)))), rows),
    list.el);
  list.first();
}

// ---- queues --------------------------------------------------------------------------------

// A message that never expires expires at the end of 9999, as Azure shows it.
function expiry(t) { return t && t.startsWith('9999-') ? 'never' : when(t); }

const plural = (k, one, many) => `${n(k)} ${k === 1 ? one : many}`;

// queuePane shows a queue's first visible messages as Peek Messages sees them, without
// changing anything; puts messages; receives them as a worker would (Get Messages: each turns
// invisible for the visibility timeout and comes with a pop receipt); deletes received ones by
// their receipt; and clears the queue. Numbers go to the service as typed, so that it judges
// them as it judges an SDK's.
function queuePane(main, seq, queue) {
  const base = accountPath() + '/queues/' + encodeURIComponent(queue) + '/messages';
  const box = h('div', { class: 'feedback', id: 'queue-feedback' }); // what an action did
  const count = h('span', { class: 'muted', id: 'q-count' });
  const peeked = h('tbody');
  const received = h('tbody');
  const gotten = new Map(); // id → message received on this page and not deleted since

  async function peek() {
    try {
      const data = await guarded(api('GET', base));
      if (seq !== viewSeq) return;
      count.textContent = '≈ ' + plural(data.approximateMessageCount, 'message', 'messages') + ', invisible ones included';
      put(peeked, data.messages.map((m) => h('tr', { class: 'message', 'data-id': m.id },
        h('td', { class: 'key' }, m.id),
        h('td', { class: 'time' }, when(m.insertionTime)),
        h('td', { class: 'time' }, expiry(m.expirationTime)),
        h('td', { class: 'num' }, n(m.dequeueCount)),
        h('td', { class: 'text' }, clip(m.text, 300)))));
      if (data.messages.length === 0) {
        put(peeked, h('tr', {}, h('td', { colspan: 5, class: 'muted' }, data.approximateMessageCount > 0
          ? 'No message is visible now: those in the queue were received or put invisible, and come back when their time comes.'
          : 'The queue is empty: put a message above, or with any SDK.')));
      }
    } catch (e) { if (seq === viewSeq) showIn(box, errorBox(e)); }
  }

  function showReceived() {
    put(received, [...gotten.values()].map((m) => h('tr', { class: 'received', 'data-id': m.id },
      h('td', { class: 'key' }, m.id),
      h('td', { class: 'num' }, n(m.dequeueCount)),
      h('td', { class: 'time' }, when(m.timeNextVisible)),
      h('td', { class: 'key receipt' }, m.popReceipt),
      h('td', { class: 'text' }, clip(m.text, 300)),
      h('td', { class: 'row-actions' }, h('button', {
        type: 'button', class: 'quiet danger m-delete', title: 'Delete Message, with this pop receipt', onclick: (ev) => remove(ev.target, m),
      }, 'Delete')))));
    if (gotten.size === 0) put(received, h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'Nothing received on this page yet.')));
  }

  async function remove(button, m) {
    try {
      await busy(button, guarded(api('DELETE', base + '/' + encodeURIComponent(m.id), { query: { popreceipt: m.popReceipt } })));
      gotten.delete(m.id);
      showReceived();
      showIn(box, notice(`Message ${m.id} is deleted.`));
      peek();
    } catch (e) {
      // 404 MessageNotFound: the receipt is stale (received again, by anyone, since) or the
      // message expired or went.
      showIn(box, errorBox(e));
    }
  }

  // Put Message.
  const text = h('textarea', { id: 'm-text', rows: 3, placeholder: 'message text, up to 64 KiB', spellcheck: 'false' });
  const visibility = h('input', { id: 'm-visibility', inputmode: 'numeric', placeholder: '0', spellcheck: 'false' });
  const ttl = h('input', { id: 'm-ttl', inputmode: 'numeric', placeholder: '604800 (7 days)', spellcheck: 'false' });
  const putButton = h('button', { class: 'primary', type: 'submit', id: 'm-put' }, 'Put message');
  const putForm = h('form', {
    class: 'card queue-form', id: 'put-form', onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const m = await busy(putButton, guarded(api('POST', base, {
          query: { visibilitytimeout: visibility.value.trim(), messagettl: ttl.value.trim() }, body: { text: text.value },
        })));
        const later = new Date(m.timeNextVisible) > new Date(m.insertionTime);
        showIn(box, notice(`Message ${m.id} is in the queue${later ? ', invisible until ' + when(m.timeNextVisible) : ''}; it expires ${expiry(m.expirationTime)}.`));
        text.value = '';
        peek();
      } catch (e) { showIn(box, errorBox(e)); }
    },
  },
  h('h2', {}, 'Put a message'),
  text,
  h('div', { class: 'form-row' },
    h('label', {}, h('span', {}, 'Visibility timeout (s)'), visibility),
    h('label', {}, h('span', {}, 'Time to live (s; -1 never expires)'), ttl),
    h('span', { class: 'spacer' }),
    putButton));

  // Get Messages.
  const howMany = h('input', { id: 'r-count', inputmode: 'numeric', placeholder: '1', size: 4, spellcheck: 'false' });
  const invisibleFor = h('input', { id: 'r-visibility', inputmode: 'numeric', placeholder: '30', size: 8, spellcheck: 'false' });
  const getButton = h('button', { class: 'primary', type: 'submit', id: 'r-get' }, 'Receive');
  const getForm = h('form', {
    class: 'inline-form get-form', onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const data = await busy(getButton, guarded(api('POST', base + '/get', {
          query: { numofmessages: howMany.value.trim(), visibilitytimeout: invisibleFor.value.trim() },
        })));
        for (const m of data.messages) gotten.set(m.id, m);
        showReceived();
        showIn(box, data.messages.length
          ? notice(`Received ${plural(data.messages.length, 'message', 'messages')}: invisible to others until ${when(data.messages[0].timeNextVisible)}; delete each with its pop receipt, or it comes back.`)
          : notice('No message is visible: nothing received.'));
        peek();
      } catch (e) { showIn(box, errorBox(e)); }
    },
  },
  h('label', {}, h('span', {}, 'How many (1–32)'), howMany),
  h('label', {}, h('span', {}, 'Invisible for (s)'), invisibleFor),
  getButton);

  const clear = h('button', {
    type: 'button', class: 'danger', id: 'q-clear', onclick: async () => {
      if (!confirm(`Delete every message of ${queue}?`)) return;
      try {
        await busy(clear, guarded(api('DELETE', base)));
        gotten.clear();
        showReceived();
        showIn(box, notice(`The queue ${queue} is cleared.`));
        peek();
      } catch (e) { showIn(box, errorBox(e)); }
    },
  }, 'Clear messages');
  const again = h('button', { type: 'button', class: 'quiet', id: 'm-peek', onclick: () => busy(again, peek()) }, 'Peek again');

  main.append(
    crumbs(['Queues', '#/queues'], [queue]),
    h('div', { class: 'pane-head' }, h('h1', {}, queue), count, clear),
    box, putForm,
    h('section', { class: 'queue-section' },
      h('div', { class: 'section-head' }, h('h2', {}, 'Visible messages'),
        h('span', { class: 'muted small' }, 'the first 32, as Peek Messages shows them: looking changes nothing'), h('span', { class: 'spacer' }), again),
      h('table', { class: 'grid messages', id: 'peeked' },
        h('thead', {}, h('tr', {}, ['Id', 'Inserted', 'Expires', 'Dequeued', 'Text'].map((x) => h('th', {}, x)))), peeked)),
    h('section', { class: 'queue-section' },
      h('div', { class: 'section-head' }, h('h2', {}, 'Received'), h('span', { class: 'spacer' }), getForm),
      h('p', { class: 'muted small' }, 'Get Messages, as a worker would: each message received turns invisible for the time given and comes with a pop receipt; deleted with it, it is gone, otherwise it comes back, its dequeue count one higher.'),
      h('table', { class: 'grid messages', id: 'received' },
        h('thead', {}, h('tr', {}, ['Id', 'Dequeued', 'Visible again', 'Pop receipt', 'Text', ''].map((x) => h('th', {}, x)))), received)));
  showReceived();
  peek();
}

// ---- the design guide's findings -----------------------------------------------------------

const kinds = {
  'hot-partition': 'Hot partition',
  'append-only-keys': 'Append-only keys',
  'prepend-only-keys': 'Prepend-only keys',
  'costly-query': 'Costly query',
  'large-entity': 'Large entities',
  'tiny-partitions': 'Tiny partitions',
  'one-partition': 'One partition',
};

function insightsPane(main, seq) {
  const box = h('div', { class: 'feedback' });
  const list = h('div', { class: 'findings', id: 'findings' }, spinner());
  const when = h('span', { class: 'muted small' });
  async function load() {
    try {
      const data = await api('GET', '/insights');
      if (seq !== viewSeq) return;
      const mine = data.findings.filter((f) => f.account === session.account);
      const others = data.findings.length - mine.length;
      showIn(box);
      when.textContent = 'updated ' + new Date().toLocaleTimeString() + ' · refreshes every 5 s';
      put(list,
        mine.length === 0 ? h('p', { class: 'muted empty' }, 'Nothing to report: no finding over the last minute of traffic. Findings appear as the workload runs (the design guide judges the last minute).') : null,
        ...mine.map(findingCard),
        others > 0 ? h('p', { class: 'muted small' }, `${others} finding${others > 1 ? 's' : ''} for other accounts (sign in as them to see).`) : null);
    } catch (e) { if (seq === viewSeq) showIn(box, errorBox(e)); }
  }
  const timer = setInterval(load, 5000);
  leaving.push(() => clearInterval(timer));
  main.append(crumbs(['Design guide']),
    h('div', { class: 'pane-head' }, h('h1', {}, 'What Azure would tell you too late'), when),
    h('p', { class: 'muted' }, "Tabula watches each table's traffic over a sliding minute for what the Table Design Guide warns about."),
    box, list);
  load();
}

function findingCard(f) {
  const figures = Object.entries(f.figures || {}).sort(([a], [b]) => a.localeCompare(b));
  return h('article', { class: 'card finding kind-' + f.kind, 'data-kind': f.kind },
    h('header', {},
      h('span', { class: 'kind' }, kinds[f.kind] || f.kind),
      h('span', {}, 'table ', session.has('table') ? h('a', { href: href('tables', f.table) }, f.table) : f.table),
      f.partition && h('span', {}, 'partition ', h('code', {}, f.partition)),
      f.filter && h('span', {}, 'filter ', h('code', {}, f.filter))),
    h('div', { class: 'figures' }, figures.map(([k, v]) => h('span', { class: 'figure' }, h('b', {}, n(v)), ' ', k))),
    h('p', { class: 'advice' }, f.advice),
    h('footer', { class: 'muted small' }, 'first seen ' + new Date(f.firstSeen).toLocaleTimeString() + ' · last seen ' + new Date(f.lastSeen).toLocaleTimeString()));
}

// ---- fault rules ---------------------------------------------------------------------------

function faultsPane(main, seq) {
  const box = h('div', { class: 'feedback' });
  // The operations a rule may name, by service, as the server lists them (it refuses others);
  // the operation field suggests those of the chosen service.
  let operations = {};
  const ops = h('datalist', { id: 'ops' });
  const suggest = () => {
    const names = f.service.value ? operations[f.service.value] || [] : [...new Set(Object.values(operations).flat())];
    ops.replaceChildren(...names.map((o) => h('option', { value: o })));
  };
  const rows = h('tbody', {}, h('tr', {}, h('td', { colspan: 6 }, spinner())));
  function show(rules) {
    rows.replaceChildren(...rules.map((r) => h('tr', { class: 'rule', 'data-id': r.id },
      h('td', {}, h('b', {}, r.id)),
      h('td', {}, matchOf(r)),
      h('td', {}, actionOf(r)),
      h('td', {}, limitsOf(r)),
      h('td', { class: 'num hits' }, n(r.hits)),
      h('td', { class: 'row-actions' }, h('button', { type: 'button', class: 'quiet danger', onclick: (ev) => remove(ev.target, r.id) }, 'Remove')))));
    if (rules.length === 0) rows.replaceChildren(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No rules: every request is served as it should be.')));
  }
  async function load() {
    try {
      const data = await guarded(api('GET', '/api/faults'));
      if (seq !== viewSeq) return;
      show(data.rules);
      if (Object.keys(operations).length === 0) { operations = data.operations; suggest(); }
    } catch (e) { if (seq === viewSeq) showIn(box, errorBox(e)); }
  }
  async function remove(button, id) {
    try {
      const data = await busy(button, guarded(api('DELETE', '/api/faults/' + encodeURIComponent(id))));
      show(data.rules);
      showIn(box, notice(`Rule ${id} removed.`));
    } catch (e) { showIn(box, errorBox(e)); }
  }
  const f = {};
  const field = (key, label, attrs = {}) => {
    f[key] = h('input', Object.assign({ id: 'f-' + key, name: key, spellcheck: 'false' }, attrs));
    return h('label', {}, h('span', {}, label), f[key]);
  };
  f.action = h('select', { id: 'f-action', name: 'action' }, h('option', { value: 'error' }, 'answer an error'), h('option', { value: 'close' }, 'close the connection'), h('option', { value: 'latency' }, 'add latency'));
  f.service = h('select', { id: 'f-service', name: 'service' }, h('option', { value: '' }, 'any'), ['table', 'blob', 'queue'].map((s) => h('option', { value: s }, s)));
  f.after = h('input', { id: 'f-after', type: 'checkbox', name: 'after' });
  const add = h('button', { class: 'primary', type: 'submit', id: 'f-add' }, 'Add rule');
  const onAction = () => {
    for (const el of form.querySelectorAll('[data-for]')) el.hidden = el.dataset.for !== f.action.value;
  };
  const form = h('form', {
    class: 'card rule-form', id: 'fault-form', onsubmit: async (ev) => {
      ev.preventDefault();
      const rule = { id: f.id.value.trim(), action: f.action.value };
      for (const k of ['operation', 'account', 'resource', 'partition', 'code', 'message', 'latency']) if (f[k].value.trim()) rule[k] = f[k].value.trim();
      if (f.service.value) rule.service = f.service.value;
      for (const k of ['probability', 'count', 'status']) if (f[k].value !== '') rule[k] = Number(f[k].value);
      if (f.after.checked) rule.after = true;
      if (rule.action !== 'error') { delete rule.status; delete rule.code; delete rule.message; }
      if (rule.action !== 'latency') delete rule.latency;
      try {
        const data = await busy(add, guarded(api('POST', '/api/faults', { body: rule })));
        show(data.rules);
        showIn(box, notice(`Rule ${rule.id} is active.`));
        f.id.value = '';
      } catch (e) { showIn(box, errorBox(e)); }
    },
  },
  h('h2', {}, 'Add a rule'),
  h('div', { class: 'form-grid' },
    field('id', 'Id', { required: true, placeholder: 'flaky-inserts' }),
    h('label', {}, h('span', {}, 'Service'), f.service),
    field('operation', 'Operation', { list: 'ops', placeholder: 'any' }),
    field('account', 'Account', { placeholder: 'any' }),
    field('resource', 'Table, container or queue', { placeholder: 'any' }),
    field('partition', 'PartitionKey', { placeholder: 'any' }),
    field('probability', 'Probability', { type: 'number', min: 0, max: 1, step: 'any', placeholder: '1' }),
    field('count', 'At most (requests)', { type: 'number', min: 0, step: 1, placeholder: 'no bound' }),
    h('label', {}, h('span', {}, 'Then'), f.action),
    h('span', { 'data-for': 'error', class: 'group' }, field('status', 'Status', { type: 'number', min: 400, max: 599, placeholder: '500' }), field('code', 'Azure code', { placeholder: 'InternalError', list: 'codes' }), field('message', 'Message', { placeholder: "Azure's default" })),
    h('span', { 'data-for': 'latency', class: 'group', hidden: true }, field('latency', 'Latency', { placeholder: '250ms' })),
    h('label', { class: 'check' }, f.after, h('span', {}, 'after applying the operation (the change is made, the client sees the failure)'))),
  ops,
  h('datalist', { id: 'codes' }, ['InternalError', 'ServerBusy', 'OperationTimedOut'].map((o) => h('option', { value: o }))),
  h('div', { class: 'actions' }, h('span', { class: 'spacer' }), add));
  f.action.addEventListener('change', onAction);
  f.service.addEventListener('change', suggest);
  const timer = setInterval(load, 5000);
  leaving.push(() => clearInterval(timer));
  main.append(crumbs(['Fault rules']),
    h('div', { class: 'pane-head' }, h('h1', {}, 'Fault rules')),
    h('p', { class: 'muted' }, 'Rules make chosen requests to the storage endpoints fail on purpose, to test an application\'s retries and error handling. They apply at once and are not kept across restarts (start with --faults FILE for that). Hits refresh every 5 s.'),
    box,
    h('table', { class: 'grid', id: 'rules' }, h('thead', {}, h('tr', {}, ['Id', 'Matches', 'Then', 'Limits', 'Hits', ''].map((x) => h('th', {}, x)))), rows),
    form);
  load();
}

function matchOf(r) {
  const parts = [['service', r.service], ['operation', r.operation], ['account', r.account], ['resource', r.resource], ['partition', r.partition]]
    .filter(([, v]) => v).map(([k, v]) => k + ' ' + v);
  return parts.length ? parts.join(', ') : 'every request';
}

function actionOf(r) {
  let s = r.action === 'error' ? `${r.status} ${r.code}` : r.action === 'latency' ? `+${r.latency}` : 'close the connection';
  if (r.after) s += ', after applying';
  return s;
}

function limitsOf(r) {
  const parts = [];
  if (r.probability) parts.push(`p=${r.probability}`);
  if (r.count) parts.push(`at most ${n(r.count)}`);
  if (r.from) parts.push('from ' + new Date(r.from).toLocaleString());
  if (r.until) parts.push('until ' + new Date(r.until).toLocaleString());
  return parts.join(', ') || '—';
}

// ---- signing in ----------------------------------------------------------------------------

// signIn shows the sign-in form, saying why when a key stopped working; account prefills it.
function signIn(why, account) {
  session.forget();
  $('#who').hidden = true;
  renderSide('');
  $('#main').replaceChildren();
  const dev = session.development;
  const acct = $('#login-account');
  const key = $('#login-key');
  acct.value = account || (dev ? dev.account : '');
  key.value = dev && acct.value === dev.account ? dev.key : '';
  const hint = $('#login-hint');
  hint.hidden = !dev;
  hint.textContent = dev ? `${dev.account} is hosted with the storage emulator's public key, filled in for you.` : '';
  showIn($('#login-error'), why && errorBox(why));
  $('#login').hidden = false;
  (acct.value ? key : acct).focus();
}

async function signedIn() {
  const who = await api('GET', '/api/accounts');
  session.accounts = who.accounts;
  session.save();
  $('#login').hidden = true;
  const sw = $('#account-switch');
  sw.replaceChildren(...who.accounts.map((a) => h('option', { value: a }, a)));
  sw.value = session.account;
  $('#who').hidden = false;
  route();
}

async function start() {
  try {
    const hello = await api('GET', '/api/hello');
    session.services = hello.services;
    session.development = hello.development || null;
  } catch (e) {
    $('#main').replaceChildren(errorBox(e));
    return;
  }
  $('#login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    session.account = $('#login-account').value.trim();
    session.key = $('#login-key').value.trim();
    try {
      await busy($('#login-submit'), signedIn());
    } catch (e) {
      const account = session.account;
      signIn(e, account);
    }
  });
  $('#sign-out').addEventListener('click', () => signIn(null));
  $('#account-switch').addEventListener('change', (ev) => signIn(null, ev.target.value));
  window.addEventListener('hashchange', route);
  session.restore();
  if (!session.account) { signIn(null); return; }
  try { await signedIn(); } catch (e) { signIn(e); }
}

start();
