// The hypervisor table: sortable by any column, filtered by text and state.
// Over-subscribed hosts (some available < 0) are highlighted; unknown figures read
// "unknown"; figures estimated from libvirt (basis ALLOCATION) are marked as such.

import { h } from "./dom.js";
import { RESOURCES, compareDecimal, formatAmount, formatPercent } from "./format.js";

const RESOURCE_FIELDS = "capacity available used basis utilization";
export const HYPERVISOR_FIELDS = `name zone ready maintenance overcommitted bookingsTracked
  cpu: resource(name: "cpu") { ${RESOURCE_FIELDS} }
  memory: resource(name: "memory") { ${RESOURCE_FIELDS} }`;

const BASIS = { BOOKINGS: "bookings", ALLOCATION: "allocation" };

/** A host with no figures at all for a resource: a tracked one has booked none of it. */
function nothingKnown(hv) {
  const used = hv.bookingsTracked ? "0" : null;
  return { capacity: null, available: null, used, basis: null, utilization: null };
}

const figures = (hv, resource) => hv[resource] ?? nothingKnown(hv);

/** The basis of the host's figures: the same for every resource it knows. */
function basis(hv) {
  return RESOURCES.map(([resource]) => figures(hv, resource).basis).find(Boolean) ?? null;
}

const text = (a, b) => a.localeCompare(b);
const number = (a, b) => a - b;
// Rounding to a float keeps order (a < b gives Number(a) <= Number(b)), so floats
// decide quickly and only their ties need the exact comparison.
const decimal = (a, b) => Number(a) - Number(b) || compareDecimal(a, b);
const yesNo = (value) => (value ? "yes" : "no");
const FIELDS = ["available", "used", "capacity", "utilization"];
const COLUMNS = [
  { key: "name", label: "Hypervisor", get: (hv) => hv.name, compare: text },
  { key: "zone", label: "Zone", get: (hv) => hv.zone, compare: text },
  { key: "ready", label: "Ready", get: (hv) => hv.ready, compare: number, show: yesNo },
  { key: "maintenance", label: "Maintenance", get: (hv) => hv.maintenance, compare: text },
  {
    key: "basis",
    label: "Basis",
    figure: true,
    get: basis,
    compare: text,
    show: (value) => (value === null ? "unknown" : BASIS[value]),
  },
  ...RESOURCES.flatMap(([resource]) =>
    FIELDS.map((field) => ({
      key: `${resource}.${field}`,
      label: field === "utilization" ? "util." : field,
      resource,
      figure: true,
      get: (hv) => figures(hv, resource)[field],
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
    const groups = RESOURCES.map(([, label]) =>
      h("th", { colspan: FIELDS.length, class: "group" }, label),
    );
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
      !needle ||
      [hv.name, hv.zone, hv.maintenance, BASIS[basis(hv)]].some((v) =>
        v?.toLowerCase().includes(needle),
      );
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
      const estimated = column.resource && figures(hv, column.resource).basis === "ALLOCATION";
      const classes = [
        column.resource && "numeric",
        column.figure && value === null && "unknown",
        typeof value === "string" && column.resource && value.startsWith("-") && "negative",
        (column.key === "basis" ? value === "ALLOCATION" : estimated) && "estimate",
      ].filter(Boolean);
      return h(
        "td",
        {
          dataset: { field: column.key, value: value ?? "" },
          class: classes.length > 0 && classes.join(" "),
          title: estimated && "estimated from libvirt's allocation (bookings not tracked)",
        },
        column.show ? column.show(value) : (value ?? ""),
      );
    }),
  );
}
