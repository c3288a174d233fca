// "What still fits": instance slots of every catalog flavor per zone, in one query
// (Query.flavors, each with slots(groupBy: ZONE)). Slots counted on libvirt's
// allocation (hosts whose bookings are not tracked) are an estimate: shown apart.
// Hosts the scheduler would not use for a flavor (not ready, disabled, restricted
// to projects, traits, isolated aggregates) count no slots: each cell says how
// many, and why, so that a planner sees what the number leaves out.

import { h } from "./dom.js";
import { compareKeys } from "./format.js";

export const SLOT_FIELDS = `flavors { name vcpus ramMib
  slots(groupBy: ZONE) { key slots allocationSlots hostsWithRoom hostsUnknown hosts
    excluded { reason hosts } } }`;

const count = (value) => (value === null ? "unknown" : value.toLocaleString("en-US"));
const REASONS = {
  NOT_READY: "not ready",
  DISABLED: "disabled (maintenance or evicted)",
  PROJECT_RESTRICTED: "restricted to projects",
  MISSING_TRAIT: "missing a required trait",
  FORBIDDEN_TRAIT: "with a forbidden trait",
  ISOLATED_AGGREGATE: "in an aggregate isolated for other flavors",
  AGGREGATE_MISMATCH: "aggregate metadata does not match",
};
const reasonText = ({ reason, hosts }) => `${hosts} ${REASONS[reason] ?? reason}`;

/** Replace the panel with a flavor x zone table of these flavors' slots. */
export function renderSlots(container, flavors) {
  if (flavors.length === 0) {
    const hint = "No flavor catalog is loaded (hypervisor-gateway serve --flavors FILE).";
    container.replaceChildren(h("p", { class: "muted" }, hint));
    return;
  }
  const zones = [...new Set(flavors.flatMap((f) => f.slots.map((s) => s.key)))].sort(compareKeys);
  const head = h(
    "tr",
    {},
    h("th", {}, "Flavor"),
    h("th", { class: "numeric" }, "vCPU"),
    h("th", { class: "numeric" }, "RAM"),
    zones.map((zone) => h("th", { class: "numeric" }, zone ?? "(no zone)")),
  );
  const rows = flavors.map((flavor) => {
    const byZone = new Map(flavor.slots.map((group) => [group.key, group]));
    return h(
      "tr",
      { dataset: { flavor: flavor.name } },
      h("td", {}, flavor.name),
      h("td", { class: "numeric" }, flavor.vcpus),
      h("td", { class: "numeric" }, `${flavor.ramMib / 1024} GiB`),
      zones.map((zone) => cell(flavor.name, zone, byZone.get(zone))),
    );
  });
  container.replaceChildren(
    h("table", { id: "slots-table" }, h("thead", {}, head), h("tbody", {}, rows)),
  );
}

function cell(flavor, zone, group) {
  const dataset = { zone: zone ?? "", value: group?.slots ?? "" };
  if (!group) return h("td", { class: "numeric unknown", dataset }, "unknown");
  const estimated = group.allocationSlots ?? 0;
  const excluded = group.excluded.reduce((sum, e) => sum + e.hosts, 0);
  const title = [
    `${flavor} in ${zone ?? "(no zone)"}: ${count(group.slots)} more instances fit`,
    `${group.hostsWithRoom} of ${group.hosts} hosts have room`,
    group.hostsUnknown ? `${group.hostsUnknown} hosts unknown` : null,
    estimated ? `${count(estimated)} of them estimated from libvirt's allocation` : null,
    excluded ? `not used by the scheduler: ${group.excluded.map(reasonText).join(", ")}` : null,
  ];
  const classes = ["numeric", group.slots === null && "unknown", group.slots === 0 && "full"];
  return h(
    "td",
    { class: classes.filter(Boolean).join(" "), dataset, title: title.filter(Boolean).join("; ") },
    count(group.slots),
    estimated > 0 &&
      h(
        "small",
        { class: "estimate", dataset: { field: "allocationSlots", value: estimated } },
        `${count(estimated)} est.`,
      ),
    excluded > 0 &&
      h(
        "small",
        {
          class: "excluded",
          dataset: {
            field: "excluded",
            value: excluded,
            reasons: group.excluded.map((e) => `${e.reason}:${e.hosts}`).join(" "),
          },
        },
        `${excluded} excl.`,
      ),
  );
}
