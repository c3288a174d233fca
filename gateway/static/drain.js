// "Before a maintenance": plan draining some hosts or a building block (Query.drainPlan,
// read-only), and see the moves, what cannot be placed and why, and each zone's
// available capacity before and after. Beside it, the operator's evictions that are
// running or failed, per zone: the drains already under way.

import { h } from "./dom.js";
import { query } from "./graphql.js";
import { RESOURCES, compareKeys, formatAmount } from "./format.js";

const PLAN = `query Drain($hosts: [String!], $filter: HypervisorFilter) {
  drainPlan(hosts: $hosts, filter: $filter) {
    drained exact estimatedHosts
    moves { uuid from to resources { name amount } }
    unplaced { uuid from reason resources { name amount } }
    estimates { hypervisor fits }
    after(groupBy: ZONE) { key resources { name available } } }
  fleetCapacity(groupBy: ZONE) { key resources { name available } } }`;
export const EVICTIONS = `query Evictions {
  evictions { name state reason outstandingRam outstandingInstances hypervisor { name zone } } }`;

const resources = (list) => list.map((r) => `${r.name} ${formatAmount(r.name, r.amount)}`).join(", ");

export class DrainPanel {
  constructor({ form, hosts, block, output, evictions }) {
    Object.assign(this, { hosts, block, output, evictions });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.plan();
    });
  }

  /** Plan the drain of the hosts and building block entered. */
  async plan() {
    const hosts = this.hosts.value.split(/[\s,]+/).filter(Boolean);
    const block = this.block.value.trim();
    const variables = {
      hosts: hosts.length ? hosts : null,
      filter: block ? { buildingBlock: block } : null,
    };
    let content;
    try {
      const data = await query(PLAN, variables);
      content = planned(data.drainPlan, data.fleetCapacity);
    } catch (error) {
      content = h("p", { class: "error" }, `Drain plan failed: ${error.message}`);
    }
    this.output.replaceChildren(content);
  }

  /** The running and failed evictions, per zone (asked again as the fleet changes). */
  async refreshEvictions() {
    let content;
    try {
      const { evictions } = await query(EVICTIONS);
      content = evictionsByZone(evictions ?? []);
    } catch (error) {
      content = h("p", { class: "muted" }, `Evictions: ${error.message}`);
    }
    this.evictions.replaceChildren(content);
  }
}

function planned(plan, before) {
  const summary = h(
    "p",
    {
      id: "drain-summary",
      dataset: { moves: plan.moves.length, unplaced: plan.unplaced.length, exact: plan.exact },
    },
    `${plan.drained.length} hosts drained: ${plan.moves.length} consumers moved, `,
    h("strong", {}, `${plan.unplaced.length} cannot be placed`),
    plan.exact
      ? ". Exact: every instance placed one by one."
      : `. Not exact: ${plan.estimatedHosts.length} untracked hosts judged in aggregate ` +
          `(${plan.estimates.filter((e) => !e.fits).length} do not fit).`,
  );
  return h(
    "div",
    { class: "drain" },
    summary,
    zonesTable(before, plan.after),
    plan.unplaced.length > 0 &&
      table(
        "drain-unplaced",
        ["Consumer", "From", "Resources", "Why"],
        plan.unplaced.map((u) => [h("code", {}, u.uuid), u.from, resources(u.resources), u.reason]),
      ),
    plan.moves.length > 0 &&
      table(
        "drain-moves",
        ["Consumer", "From", "To", "Resources"],
        plan.moves.map((m) => [h("code", {}, m.uuid), m.from, m.to, resources(m.resources)]),
      ),
  );
}

function zonesTable(before, after) {
  const afterByZone = new Map(after.map((g) => [g.key, g]));
  const zones = before
    .filter((g) => afterByZone.has(g.key))
    .sort((a, b) => compareKeys(a.key, b.key));
  const available = (group, name) =>
    group.resources.find((r) => r.name === name)?.available ?? null;
  return table(
    "drain-zones",
    ["Zone", ...RESOURCES.flatMap(([, label]) => [`${label} before`, "after"])],
    zones.map((group) => [
      group.key ?? "(no zone)",
      ...RESOURCES.flatMap(([name]) => [
        formatAmount(name, available(group, name)),
        formatAmount(name, available(afterByZone.get(group.key), name)),
      ]),
    ]),
  );
}

function evictionsByZone(evictions) {
  const busy = evictions.filter((e) => e.state === "RUNNING" || e.state === "FAILED");
  if (busy.length === 0) return h("p", { class: "muted" }, "No eviction running or failed.");
  const zoneOf = (e) => e.hypervisor?.zone ?? null;
  const zones = [...new Set(busy.map(zoneOf))].sort(compareKeys);
  return h(
    "div",
    {},
    zones.map((zone) =>
      h(
        "div",
        { class: "eviction-zone", dataset: { zone: zone ?? "" } },
        h("h3", {}, zone ?? "(no zone)"),
        h(
          "ul",
          {},
          busy
            .filter((e) => zoneOf(e) === zone)
            .map((e) =>
              h(
                "li",
                { dataset: { eviction: e.name, state: e.state } },
                h("span", { class: `badge ${e.state === "FAILED" ? "danger" : "warning"}` }, e.state),
                ` ${e.hypervisor?.name ?? e.name}: ${e.reason ?? ""} · `,
                `${e.outstandingInstances.length} instances, `,
                formatAmount("memory", e.outstandingRam),
                " left",
              ),
            ),
        ),
      ),
    ),
  );
}

function table(id, head, rows) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { id },
      h("thead", {}, h("tr", {}, head.map((label) => h("th", {}, label)))),
      h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))),
    ),
  );
}
