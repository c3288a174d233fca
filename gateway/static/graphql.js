// The one place the browser pages talk to the gateway: queries over HTTP, and
// subscriptions over a WebSocket on the same URL (the graphql-transport-ws protocol).
// Credentials go in headers(), which both ways use: HTTP sends them as headers,
// the WebSocket (whose headers a browser cannot set) in connection_init's payload.

export const endpoint = new URL("graphql", document.baseURI);

const PROTOCOL = "graphql-transport-ws";
let credentials = {};

/** Headers every request carries from now on, e.g. {authorization: "Bearer ..."}. */
export function setCredentials(headers) {
  credentials = { ...headers };
}

function headers(extra = {}) {
  return { ...credentials, ...extra };
}

/** POST a GraphQL request; resolves to the response body, errors included. */
export async function post(request, extra = {}) {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: headers({
      "content-type": "application/json",
      accept: "application/graphql-response+json, application/json;q=0.9",
      ...extra,
    }),
    body: JSON.stringify(request),
  });
  if (!(response.headers.get("content-type") ?? "").includes("json")) {
    throw new Error(`${response.status} ${response.statusText}`);
  }
  return response.json();
}

/** Run a query; resolves to its data, rejects on any error. */
export async function query(document, variables = {}) {
  const body = await post({ query: document, variables });
  if (body.errors?.length) throw graphQLError(body.errors);
  return body.data;
}

function graphQLError(errors) {
  const error = new Error(errors.map((e) => e.message).join("; "));
  error.graphQLErrors = errors;
  return error;
}

/**
 * One graphql-transport-ws connection carrying any number of subscriptions.
 * onClose(reason) tells of a connection lost after open() succeeded; close() is silent.
 */
export class Socket {
  #ws = null;
  #sinks = new Map();
  #lastId = 0;
  #closing = false;

  constructor({ extraHeaders = {}, onClose = () => {} } = {}) {
    this.payload = headers(extraHeaders);
    this.onClose = onClose;
  }

  /** Connect; resolves once the server acknowledged connection_init. */
  open(ackTimeoutMs = 5000) {
    const url = new URL(endpoint);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    return new Promise((resolve, reject) => {
      const ws = (this.#ws = new WebSocket(url, PROTOCOL));
      let acknowledged = false;
      // The server would close with 4408 itself; this covers one that never answers.
      const timer = setTimeout(() => ws.close(4408, "no connection_ack"), ackTimeoutMs);
      ws.onopen = () => this.#send({ type: "connection_init", payload: this.payload });
      ws.onmessage = (event) => {
        let message;
        try {
          message = JSON.parse(event.data);
        } catch {
          ws.close(4400, "invalid message");
          return;
        }
        if (message.type === "connection_ack") {
          acknowledged = true;
          clearTimeout(timer);
          resolve();
        } else if (message.type === "ping") {
          this.#send({ type: "pong", payload: message.payload });
        } else if (message.type === "next") {
          this.#sinks.get(message.id)?.next(message.payload);
        } else if (message.type === "error") {
          // Only the subscription ends (it failed validation, say); the connection stays.
          this.#end(message.id)?.error(graphQLError(message.payload));
        } else if (message.type === "complete") {
          this.#end(message.id)?.complete?.();
        }
      };
      ws.onclose = (event) => {
        clearTimeout(timer);
        const reason = `WebSocket closed (${event.code}${event.reason ? `: ${event.reason}` : ""})`;
        for (const sink of this.#sinks.values()) sink.error(new Error(reason));
        this.#sinks.clear();
        // 1006: refused or unreachable (a browser tells no more than that).
        if (!acknowledged) reject(new Error(event.code === 1006 ? "cannot connect" : reason));
        else if (!this.#closing) this.onClose(reason);
      };
    });
  }

  /** Start a subscription; sink gets next(result), error(error), complete(). Returns stop(). */
  subscribe(document, variables, sink) {
    const id = String(++this.#lastId);
    this.#sinks.set(id, sink);
    this.#send({ id, type: "subscribe", payload: { query: document, variables } });
    return () => {
      if (this.#end(id)) this.#send({ id, type: "complete" });
    };
  }

  close() {
    this.#closing = true;
    this.#sinks.clear();
    this.#ws?.close(1000, "done");
  }

  #end(id) {
    const sink = this.#sinks.get(id);
    this.#sinks.delete(id);
    return sink;
  }

  #send(message) {
    if (this.#ws?.readyState === WebSocket.OPEN) this.#ws.send(JSON.stringify(message));
  }
}
