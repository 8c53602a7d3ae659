// Small DOM and URL helpers shared by the page's modules.

export const $ = (id) => document.getElementById(id);

// el builds an element: el('li', {class: 'you', 'data-turn': 't1'}, 'text', child).
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k === 'style') e.style.cssText = v; // CSSOM: allowed by the page's CSP, unlike a style attribute
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c !== undefined && c !== null) e.append(c);
  }
  return e;
}

// wsURL turns a path on this server into a ws: or wss: URL.
export function wsURL(path) {
  const u = new URL(path, location.href);
  u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.href;
}

// logTo appends an entry to a log list and keeps it bounded and scrolled.
export function logTo(list, cls, text, meta) {
  const li = el('li', {class: cls}, el('span', {class: 'text', text}));
  if (meta) li.append(el('span', {class: 'meta', text: meta}));
  list.append(li);
  while (list.children.length > 200) list.firstElementChild.remove();
  list.scrollTop = list.scrollHeight;
  return li;
}

export function ms(n) {
  if (n >= 10000) return (n / 1000).toFixed(0) + ' s';
  if (n >= 1000) return (n / 1000).toFixed(1) + ' s';
  return Math.round(n) + ' ms';
}

// closeText describes a WebSocket close event.
export function closeText(ev) {
  const names = {1000: 'normal', 1001: 'going away', 1006: 'connection lost', 1008: 'policy', 1009: 'too big', 1011: 'server error', 1013: 'try again later'};
  const name = names[ev.code] || '';
  return `closed ${ev.code}${name ? ' (' + name + ')' : ''}${ev.reason ? ': ' + ev.reason : ''}`;
}
