// Capacity per zone as bars: booked, free and reserved, for cpu and memory.

import { h } from "./dom.js";
import { RESOURCES, approximate, formatAmount, formatPercent } from "./format.js";

export const FLEET_GROUP_FIELDS = `key hypervisorCount resources {
  name physical reserved capacity booked free allocated
  unknownCapacityHosts overcommittedHosts utilization }`;

const FIGURES = ["booked", "free", "reserved", "capacity", "physical", "allocated"];

/** Replace the zone cards with these FleetGroups (zones in name order, no zone last). */
export function renderZones(container, groups) {
  const sorted = [...groups].sort((a, b) =>
    a.key === b.key ? 0 : a.key === null ? 1 : b.key === null ? -1 : a.key.localeCompare(b.key),
  );
  container.replaceChildren(...sorted.map(zoneCard));
}

function zoneCard(group) {
  const name = group.key ?? "(no zone)";
  const hosts = `${group.hypervisorCount} hypervisor${group.hypervisorCount === 1 ? "" : "s"}`;
  const resources = new Map(group.resources.map((r) => [r.name, r]));
  return h(
    "section",
    { class: "zone", dataset: { zone: group.key ?? "" } },
    h("h3", {}, name, " ", h("small", {}, hosts)),
    RESOURCES.map(([key, label]) => resourceBlock(key, label, resources.get(key))),
  );
}

function resourceBlock(key, label, resource) {
  if (!resource) {
    const none = h("p", {}, `${label}: none`);
    return h("div", { class: "resource", dataset: { resource: key } }, none);
  }
  const utilization = `${formatPercent(resource.utilization)} booked`;
  return h(
    "div",
    { class: "resource", dataset: { resource: key } },
    h(
      "div",
      { class: "resource-head" },
      h("strong", {}, label),
      h("span", { dataset: { field: "utilization" } }, utilization),
      badge(resource, "overcommittedHosts", "danger", "over-subscribed"),
      badge(resource, "unknownCapacityHosts", "muted", "unknown capacity"),
    ),
    bar(resource),
    h(
      "dl",
      { class: "figures" },
      FIGURES.map((field) => [
        h("dt", { class: field }, field),
        h(
          "dd",
          {
            dataset: { field, value: resource[field] },
            title: `${resource[field]} ${unit(key)}`,
            class: resource[field].startsWith("-") && "negative",
          },
          formatAmount(key, resource[field]),
        ),
      ]),
    ),
  );
}

function badge(resource, field, style, text) {
  const count = resource[field];
  const attributes = { class: `badge ${style}`, dataset: { field } };
  return count > 0 && h("span", attributes, `${count} ${text}`);
}

/**
 * Booked and free share the schedulable capacity (booked beyond it is drawn as
 * over-subscribed); reserved is set apart, since it is taken before overcommit.
 */
function bar(resource) {
  const booked = approximate(resource.booked);
  const free = approximate(resource.free);
  const capacity = approximate(resource.capacity);
  const reserved = approximate(resource.reserved);
  const within = Math.min(booked, capacity);
  const over = Math.max(booked - capacity, 0);
  const total = Math.max(booked + Math.max(free, 0), capacity) + reserved || 1;
  const segment = (cls, amount) =>
    amount > 0 && h("span", { class: cls, style: { width: `${(100 * amount) / total}%` } });
  const label = `booked ${resource.booked} of ${resource.capacity}`;
  return h(
    "div",
    { class: "bar", role: "img", "aria-label": label },
    segment("booked", within),
    segment("over", over),
    segment("free", Math.max(free, 0)),
    segment("reserved", reserved),
  );
}

function unit(resource) {
  return resource === "memory" ? "bytes" : resource === "cpu" ? "cores" : "";
}
