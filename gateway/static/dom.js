// Building DOM nodes without innerHTML: names and labels come from the cluster,
// so they are always set as text, never parsed as markup.

/** h("td", {class: "x", dataset: {value: "4"}}, "text", childNode, ...) */
export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "style") Object.assign(node.style, value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  const present = (child) => child !== null && child !== undefined && child !== false;
  node.append(...children.flat(Infinity).filter(present));
  return node;
}
