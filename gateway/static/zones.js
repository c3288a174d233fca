// Capacity per zone as bars on the best known figure (available and used), for cpu
// and memory. A zone of a fleet being rolled over to spec.bookings mixes two views:
// Placement's bookings on tracked hosts, libvirt's allocation on the others. The part
// that comes from libvirt is an estimate Placement does not share, so it is hatched.

import { h } from "./dom.js";
import {
  RESOURCES,
  approximate,
  compareKeys,
  formatAmount,
  formatPercent,
  subtract,
} from "./format.js";

export const FLEET_GROUP_FIELDS = `key hypervisorCount trackedHosts untrackedHosts resources {
  name trackedHosts untrackedHosts physical reserved capacity booked free allocated
  available used unknownCapacityHosts overcommittedHosts utilization }`;

// The best known figures first, then what each view says on its own hosts.
const FIGURES = [
  ["available", "available", "best known free: free if tracked, else capacity - allocated"],
  ["used", "used", "booked if tracked, else allocated"],
  ["capacity", "capacity", "schedulable: (physical - reserved) × overcommit"],
  ["physical", "physical", "status.capacity"],
  ["free", "free (bookings)", "Placement's view: capacity - booked, tracked hosts only"],
  ["booked", "booked", "consumer bookings of the tracked hosts"],
  ["reserved", "reserved", "reservations of the tracked hosts, taken before overcommit"],
  ["allocated", "allocated (libvirt)", "status.allocation: what the hosts really run"],
];

/** Replace the zone cards with these FleetGroups (zones in name order, no zone last). */
export function renderZones(container, groups) {
  const sorted = [...groups].sort((a, b) => compareKeys(a.key, b.key));
  container.replaceChildren(...sorted.map(zoneCard));
}

function zoneCard(group) {
  const name = group.key ?? "(no zone)";
  const hosts = `${group.hypervisorCount} hypervisor${group.hypervisorCount === 1 ? "" : "s"}`;
  const resources = new Map(group.resources.map((r) => [r.name, r]));
  return h(
    "section",
    { class: "zone", dataset: { zone: group.key ?? "" } },
    h(
      "h3",
      {},
      h("span", { class: "zone-name" }, name),
      h("small", {}, hosts),
      hostCount(group, "trackedHosts", "tracked", "bookings"),
      hostCount(group, "untrackedHosts", "untracked", "allocation"),
    ),
    RESOURCES.map(([key, label]) => resourceBlock(key, label, resources.get(key))),
  );
}

function hostCount(group, field, text, basis) {
  const count = group[field];
  const title =
    basis === "bookings"
      ? "hosts with spec.bookings: figures from Placement's bookings"
      : "hosts without spec.bookings: figures estimated from libvirt's allocation";
  return h(
    "span",
    { class: `hosts ${basis}`, dataset: { field, value: count }, title },
    `${count} ${text}`,
  );
}

function resourceBlock(key, label, resource) {
  if (!resource) {
    const none = h("p", {}, `${label}: none`);
    return h("div", { class: "resource", dataset: { resource: key } }, none);
  }
  const estimate = {
    available: subtract(resource.available, resource.free ?? "0"),
    used: subtract(resource.used, resource.booked ?? "0"),
  };
  return h(
    "div",
    { class: "resource", dataset: { resource: key } },
    h(
      "div",
      { class: "resource-head" },
      h("strong", {}, label),
      h(
        "span",
        { dataset: { field: "utilization" } },
        `${formatPercent(resource.utilization)} used`,
      ),
      badge(resource, "overcommittedHosts", "danger", "over-subscribed"),
      badge(resource, "unknownCapacityHosts", "muted", "unknown capacity"),
    ),
    bar(resource, estimate),
    estimateNote(key, resource, estimate),
    h(
      "dl",
      { class: "figures" },
      FIGURES.map(([field, name, title]) => [
        h("dt", { class: field, title }, name),
        h(
          "dd",
          {
            dataset: { field, value: resource[field] ?? "" },
            title: resource[field] === null ? "unknown" : `${resource[field]} ${unit(key)}`,
            class: resource[field]?.startsWith("-") && "negative",
          },
          formatAmount(key, resource[field]),
        ),
      ]),
    ),
  );
}

/** How much of available and used comes from libvirt, when any does. */
function estimateNote(key, resource, estimate) {
  if (!resource.untrackedHosts || estimate.available === null) return null;
  return h(
    "p",
    { class: "estimate-note" },
    h("span", { class: "key estimate-free" }),
    "libvirt estimate on ",
    `${resource.untrackedHosts} untracked host${resource.untrackedHosts === 1 ? "" : "s"}: `,
    h(
      "span",
      { dataset: { field: "estimatedAvailable", value: estimate.available } },
      `${formatAmount(key, estimate.available)} available`,
    ),
    ", ",
    h(
      "span",
      { dataset: { field: "estimatedUsed", value: estimate.used ?? "" } },
      `${formatAmount(key, estimate.used)} used`,
    ),
  );
}

function badge(resource, field, style, text) {
  const count = resource[field];
  const attributes = { class: `badge ${style}`, dataset: { field } };
  return count > 0 && h("span", attributes, `${count} ${text}`);
}

/**
 * Used and available share the capacity (used beyond it is drawn as over-subscribed),
 * each split into what Placement says (solid) and what libvirt says (hatched);
 * reserved is set apart, since it is taken before overcommit.
 */
function bar(resource, estimate) {
  const capacity = approximate(resource.capacity);
  const booked = approximate(resource.booked);
  const allocated = approximate(estimate.used);
  const free = Math.max(approximate(resource.free), 0);
  const unallocated = Math.max(approximate(estimate.available), 0);
  const reserved = approximate(resource.reserved);
  const bookedWithin = Math.min(booked, capacity);
  const allocatedWithin = Math.min(allocated, capacity - bookedWithin);
  const over = Math.max(booked + allocated - capacity, 0);
  const total = Math.max(booked + allocated + free + unallocated, capacity) + reserved || 1;
  const segment = (cls, amount) =>
    amount > 0 && h("span", { class: cls, style: { width: `${(100 * amount) / total}%` } });
  const label =
    `available ${resource.available} of ${resource.capacity}` +
    (estimate.available ? ` (${estimate.available} estimated from libvirt)` : "");
  return h(
    "div",
    { class: "bar", role: "img", "aria-label": label },
    segment("booked", bookedWithin),
    segment("estimate-used", allocatedWithin),
    segment("over", over),
    segment("free", free),
    segment("estimate-free", unallocated),
    segment("reserved", reserved),
  );
}

function unit(resource) {
  return resource === "memory" ? "bytes" : resource === "cpu" ? "cores" : "";
}
