// graphql-ws's createClient and Apollo Client over its GraphQLWsLink against a running
// gateway: a query over WebSocket, automatic persisted queries by hash alone (the
// fallback a client writes: on PERSISTED_QUERY_NOT_FOUND, the query with its hash),
// and a hypervisorChanged subscription that reports the first change.
// Usage: node live.mjs ws://host:port/graphql ; prints one JSON report on stdout, which
// tests/test_clients.py judges. The test changes a host once the subscription listens.
import { createHash } from "node:crypto";

import { ApolloClient, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const url = process.argv[2];
const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const persistedQuery = (query) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });

const COUNT = "{ fleetCapacity { hypervisorCount } }";
const ZONES = "subscription { fleetCapacityChanged(groupBy: ZONE) { key hypervisorCount } }";
const APOLLO = "query ApolloZones { fleetCapacity(groupBy: ZONE) { key hypervisorCount } }";
const CHANGED = "subscription { hypervisorChanged { type hypervisor { name } } }";

/** The first result of one operation (its errors, if refused), then unsubscribed. */
function first(client, payload) {
  return new Promise((resolve, reject) => {
    const unsubscribe = client.subscribe(payload, {
      next: (result) => {
        unsubscribe();
        resolve(result);
      },
      error: (errors) => (Array.isArray(errors) ? resolve({ errors }) : reject(errors)),
      complete: () => {},
    });
  });
}

/** What a client sends for automatic persisted queries: the hash alone (graphql-ws
 * requires a string query: an empty one), then, when it is not found, the query with
 * its hash; each answer as the server gave it. */
async function byHash(client, query) {
  const extensions = persistedQuery(query);
  const answers = [await first(client, { query: "", extensions })];
  const code = answers[0].errors?.[0]?.extensions?.code;
  if (code === "PERSISTED_QUERY_NOT_FOUND") answers.push(await first(client, { query, extensions }));
  return answers;
}

async function apollo(wsClient) {
  const client = new ApolloClient({
    cache: new InMemoryCache(),
    link: new PersistedQueryLink({ sha256 }).concat(new GraphQLWsLink(wsClient)),
  });
  const { data, error } = await client.query({ query: gql(APOLLO), fetchPolicy: "network-only" });
  if (error) throw error;
  return data.fleetCapacity.map(({ key, hypervisorCount }) => ({ key, hypervisorCount }));
}

const client = createClient({ url, webSocketImpl: WebSocket, lazy: false, retryAttempts: 0 });
try {
  const report = {
    query: await first(client, { query: COUNT }),
    persisted: [...(await byHash(client, COUNT)), ...(await byHash(client, COUNT))],
    subscription: [...(await byHash(client, ZONES)), ...(await byHash(client, ZONES))],
    apollo: await apollo(client),
  };
  // Last, alone: the test changes a host once this one subscription listens.
  const waited = new Promise((_, reject) =>
    setTimeout(() => reject(new Error("no change within 60 s")), 60_000).unref(),
  );
  report.changed = await Promise.race([first(client, { query: CHANGED }), waited]);
  process.stdout.write(JSON.stringify(report));
} finally {
  await client.dispose();
}
