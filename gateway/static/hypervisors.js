// The hypervisor table: sortable by any column, filtered by text and state.
// Over-subscribed hosts (some free < 0) are highlighted; unknown figures read "unknown".

import { h } from "./dom.js";
import { RESOURCES, compareDecimal, formatAmount, formatPercent } from "./format.js";

const RESOURCE_FIELDS = "capacity booked free utilization";
export const HYPERVISOR_FIELDS = `name zone ready maintenance overcommitted
  cpu: resource(name: "cpu") { ${RESOURCE_FIELDS} }
  memory: resource(name: "memory") { ${RESOURCE_FIELDS} }`;

// A host with no figures at all for a resource has nothing booked and an unknown capacity.
const NOTHING_KNOWN = { capacity: null, booked: "0", free: null, utilization: null };

const text = (a, b) => a.localeCompare(b);
const number = (a, b) => a - b;
// Rounding to a float keeps order (a < b gives Number(a) <= Number(b)), so floats
// decide quickly and only their ties need the exact comparison.
const decimal = (a, b) => Number(a) - Number(b) || compareDecimal(a, b);
const yesNo = (value) => (value ? "yes" : "no");
const COLUMNS = [
  { key: "name", label: "Hypervisor", get: (hv) => hv.name, compare: text },
  { key: "zone", label: "Zone", get: (hv) => hv.zone, compare: text },
  { key: "ready", label: "Ready", get: (hv) => hv.ready, compare: number, show: yesNo },
  { key: "maintenance", label: "Maintenance", get: (hv) => hv.maintenance, compare: text },
  ...RESOURCES.flatMap(([resource]) =>
    ["free", "booked", "capacity", "utilization"].map((field) => ({
      key: `${resource}.${field}`,
      label: field === "utilization" ? "util." : field,
      resource,
      get: (hv) => (hv[resource] ?? NOTHING_KNOWN)[field],
      compare: field === "utilization" ? number : decimal,
      show: field === "utilization" ? formatPercent : (v) => formatAmount(resource, v),
    })),
  ),
];

export class HypervisorTable {
  #nodes = new Map();
  #rows = new WeakMap(); // hypervisor record -> its <tr>, so sorting and filtering reuse rows
  #frame = null;
  #sort = { key: "name", direction: 1 };

  constructor({ table, filter, oversubscribedOnly, count }) {
    Object.assign(this, { table, filter, oversubscribedOnly, count });
    const plain = COLUMNS.filter((column) => !column.resource);
    const groups = RESOURCES.map(([, label]) => h("th", { colspan: 4, class: "group" }, label));
    const headers = COLUMNS.map((column) =>
      h(
        "th",
        {
          dataset: { sort: column.key },
          class: column.resource && "numeric",
          onclick: () => this.sortBy(column.key),
        },
        column.label,
      ),
    );
    table.createTHead().replaceChildren(
      h("tr", {}, plain.map(() => h("th", {})), groups),
      h("tr", {}, headers),
    );
    this.body = table.createTBody();
    filter.addEventListener("input", () => this.render());
    oversubscribedOnly.addEventListener("change", () => this.render());
  }

  /** Show these hypervisors (all of them). */
  update(nodes) {
    this.#nodes = new Map(nodes.map((hv) => [hv.name, hv]));
    this.render();
  }

  /** Apply one hypervisorChanged event; a burst of them is drawn once. */
  apply({ type, hypervisor }) {
    if (type === "DELETED") this.#nodes.delete(hypervisor.name);
    else this.#nodes.set(hypervisor.name, hypervisor);
    this.#frame ??= requestAnimationFrame(() => {
      this.#frame = null;
      this.render();
    });
  }

  /** Sort by this column; again on the same column reverses the order. */
  sortBy(key) {
    const same = this.#sort.key === key;
    this.#sort = { key, direction: same ? -this.#sort.direction : 1 };
    this.render();
  }

  render() {
    const column = COLUMNS.find((c) => c.key === this.#sort.key);
    const needle = this.filter.value.trim().toLowerCase();
    const matches = (hv) =>
      !needle || [hv.name, hv.zone, hv.maintenance].some((v) => v?.toLowerCase().includes(needle));
    const rows = [...this.#nodes.values()]
      .filter((hv) => matches(hv) && (!this.oversubscribedOnly.checked || hv.overcommitted))
      .sort((a, b) => this.#compare(column, a, b));
    this.body.replaceChildren(...rows.map((hv) => this.#row(hv)));
    const direction = this.#sort.direction > 0 ? "ascending" : "descending";
    for (const th of this.table.tHead.rows[1].cells) {
      th.setAttribute("aria-sort", th.dataset.sort === this.#sort.key ? direction : "none");
    }
    this.count.textContent = `${rows.length} of ${this.#nodes.size} hypervisors`;
  }

  #row(hv) {
    let tr = this.#rows.get(hv);
    if (!tr) this.#rows.set(hv, (tr = row(hv)));
    return tr;
  }

  /** Unknown values last whichever the direction, ties by name: as the API orders. */
  #compare(column, a, b) {
    const x = column.get(a);
    const y = column.get(b);
    if ((x === null) !== (y === null)) return x === null ? 1 : -1;
    const order = x === null ? 0 : this.#sort.direction * column.compare(x, y);
    return order || text(a.name, b.name);
  }
}

function row(hv) {
  return h(
    "tr",
    { class: hv.overcommitted && "oversubscribed", dataset: { name: hv.name } },
    COLUMNS.map((column) => {
      const value = column.get(hv);
      const classes = column.resource && [
        "numeric",
        value === null && "unknown",
        typeof value === "string" && value.startsWith("-") && "negative",
      ];
      return h(
        "td",
        {
          dataset: { field: column.key, value: value ?? "" },
          class: classes && classes.filter(Boolean).join(" "),
        },
        column.show ? column.show(value) : (value ?? ""),
      );
    }),
  );
}
