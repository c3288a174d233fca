// The capacity dashboard: loads everything once, then follows changes through two
// subscriptions (the slots per flavor and zone are asked again when the totals
// change). Without a working WebSocket it polls instead, and tries the WebSocket
// again with growing pauses; the header says which of the two is in use.

import { ConsumerSearch } from "./consumer.js";
import { h } from "./dom.js";
import { DrainPanel } from "./drain.js";
import { Socket, query, setCredentials } from "./graphql.js";
import { HYPERVISOR_FIELDS, HypervisorTable } from "./hypervisors.js";
import { SLOT_FIELDS, renderSlots } from "./slots.js";
import { FLEET_GROUP_FIELDS, renderZones } from "./zones.js";

const POLL_MS = 5000;
const CONSUMER_REFRESH_MS = 2000; // at most this often while hypervisors change
const SLOTS_REFRESH_MS = 5000; // at most this often while the totals change (as polling)
const RETRY_MS = { first: 5000, max: 60000 };

const HOSTS = `hypervisors { nodes { ${HYPERVISOR_FIELDS} } }
  syncStatus { source synced error hypervisors }`;
const EVERYTHING = `query Dashboard {
  fleetCapacity(groupBy: ZONE) { ${FLEET_GROUP_FIELDS} } ${SLOT_FIELDS} ${HOSTS} }`;
const HOSTS_ONLY = `query Hypervisors { ${HOSTS} }`;
const SLOTS_ONLY = `query Slots { ${SLOT_FIELDS} }`;
const ZONES_CHANGED = `subscription Zones {
  fleetCapacityChanged(groupBy: ZONE) { ${FLEET_GROUP_FIELDS} } }`;
const HOSTS_CHANGED = `subscription Hosts {
  hypervisorChanged { type hypervisor { ${HYPERVISOR_FIELDS} } } }`;

const $ = (id) => document.getElementById(id);
const zones = $("zones");
const slots = $("slots");
const table = new HypervisorTable({
  table: $("hypervisors"),
  filter: $("filter"),
  oversubscribedOnly: $("oversubscribed-only"),
  count: $("count"),
});
const drain = new DrainPanel({
  form: $("drain-form"),
  hosts: $("drain-hosts"),
  block: $("drain-block"),
  output: $("drain"),
  evictions: $("evictions"),
});
const consumer = new ConsumerSearch({
  form: $("consumer-form"),
  input: $("consumer-uuid"),
  output: $("consumer"),
});

// With --auth kubernetes every request needs a bearer token (for example from
// `kubectl create token`). It is kept for this browser tab only.
const TOKEN_KEY = "hypervisor-gateway-token";

function useStoredToken() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) setCredentials({ authorization: `Bearer ${token}` });
}

function needsToken(error) {
  const code = error.graphQLErrors?.[0]?.extensions?.code;
  return code === "UNAUTHENTICATED" || code === "FORBIDDEN";
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  location.reload();
});

function setConnection(state, message) {
  const badge = $("connection");
  badge.dataset.state = state;
  badge.textContent = message;
}

function updated(status) {
  if (status) {
    const problem = status.error ? ` · ${status.error}` : status.synced ? "" : " · not synced";
    $("source").textContent = `${status.hypervisors} hypervisors from ${status.source}${problem}`;
  }
  $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

async function loadEverything() {
  const data = await query(EVERYTHING);
  renderZones(zones, data.fleetCapacity);
  renderSlots(slots, data.flavors);
  table.update(data.hypervisors.nodes);
  updated(data.syncStatus);
}

// Events that arrive while the table is being reloaded, applied after it: replayed
// in order, they leave every host as its newest event or the reload has it.
let held = null;

async function reloadHosts() {
  held = [];
  try {
    const data = await query(HOSTS_ONLY);
    table.update(data.hypervisors.nodes);
    updated(data.syncStatus);
  } finally {
    for (const change of held) table.apply(change);
    held = null;
  }
}

/** Call task once, ms from the first of a burst of calls: a burst costs one query. */
function coalesced(task, ms) {
  let timer = null;
  return () => {
    timer ??= setTimeout(() => {
      timer = null;
      task();
    }, ms);
  };
}

const refreshConsumer = coalesced(() => consumer.refresh(), CONSUMER_REFRESH_MS);
const refreshEvictions = coalesced(() => drain.refreshEvictions(), CONSUMER_REFRESH_MS);
function hostChanged(change) {
  if (held) held.push(change);
  else table.apply(change);
  updated(null);
  refreshConsumer();
  refreshEvictions();
}

// Slots have no subscription: they follow the totals, which change with every host.
const refreshSlots = coalesced(async () => {
  try {
    renderSlots(slots, (await query(SLOTS_ONLY)).flavors);
  } catch (error) {
    slots.replaceChildren(h("p", { class: "error" }, `Slots failed: ${error.message}`));
  }
}, SLOTS_REFRESH_MS);

// --- polling, while there is no live connection -------------------------------
let poller = null;
let pollingMessage = "";
let retry = RETRY_MS.first;

async function poll() {
  try {
    await loadEverything();
    consumer.refresh();
    drain.refreshEvictions();
    if ($("connection").dataset.state === "offline") setConnection("polling", pollingMessage);
  } catch (error) {
    if (needsToken(error)) {
      $("token-form").hidden = false;
      setConnection("offline", error.message);
    } else {
      setConnection("offline", `gateway unreachable: ${error.message}`);
    }
  }
}

function fallBack(reason) {
  pollingMessage = `polling every ${POLL_MS / 1000} s (no live updates: ${reason})`;
  setConnection("polling", pollingMessage);
  if (!poller) poller = setInterval(poll, POLL_MS);
  setTimeout(goLive, retry);
  retry = Math.min(retry * 2, RETRY_MS.max);
}

// --- live updates -------------------------------------------------------------
async function goLive() {
  let failed = false;
  const fail = (error) => {
    if (failed) return; // both subscriptions may report the same lost connection
    failed = true;
    socket.close();
    fallBack(error.message);
  };
  const socket = new Socket({ onClose: (reason) => fail(new Error(reason)) });
  try {
    await socket.open();
  } catch (error) {
    fallBack(error.message);
    return;
  }
  socket.subscribe(ZONES_CHANGED, {}, {
    next: (result) => {
      if (result.errors?.length) return fail(new Error(result.errors[0].message));
      renderZones(zones, result.data.fleetCapacityChanged);
      refreshSlots();
      updated(null);
      // The first totals arrive at once: from then on the page is live.
      if (poller) {
        clearInterval(poller);
        poller = null;
        // Catch up with what changed between the last poll and the subscription.
        reloadHosts().catch((error) => fail(error));
      }
      retry = RETRY_MS.first;
      setConnection("live", "live");
    },
    error: fail,
    complete: () => fail(new Error("the server ended the subscription")),
  });
  socket.subscribe(HOSTS_CHANGED, {}, {
    next: (result) =>
      result.errors?.length
        ? fail(new Error(result.errors[0].message))
        : hostChanged(result.data.hypervisorChanged),
    error: fail,
    complete: () => fail(new Error("the server ended the subscription")),
  });
}

async function start() {
  useStoredToken();
  setConnection("connecting", "connecting…");
  poller = setInterval(poll, POLL_MS); // until the subscription delivers
  await poll();
  goLive();
}

start();
