// dom.js — builds elements from data safely: text always goes in as textContent, never as HTML.

export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") element.className = value;
    else if (name === "text") element.textContent = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** A definition list from [term, value] pairs; values may be strings or nodes. */
export function facts(pairs) {
  return el("dl", { class: "facts" }, pairs.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", {}, value)]));
}

/** Set an element's text, or one attribute, only when it differs: for views updated at every step, where writing the
 * same text anew still makes a new text node and an attribute write invalidates style. */
export function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

export function setAttribute(element, name, value) {
  if (element.getAttribute(name) !== value) element.setAttribute(name, value);
}
