// GraphiQL on the vendored libraries. Its fetcher goes through graphql.js, so the
// headers typed in GraphiQL's header editor (an Authorization header, say) reach
// the gateway with queries over HTTP and, in connection_init, with subscriptions.

import { Socket, post } from "./graphql.js";

const EXAMPLE = `# Free capacity per zone. Ctrl-Enter runs the query.
{
  fleetCapacity(groupBy: ZONE) {
    key
    hypervisorCount
    resources {
      name
      capacity
      booked
      free
      utilization
      overcommittedHosts
    }
  }
}
`;

// Parsed here rather than taken from GraphiQL's documentAST, which can lag behind
// an editor changed just before running.
function isSubscription({ query, operationName }) {
  const { parse, getOperationAST } = GraphiQL.GraphQL;
  try {
    return getOperationAST(parse(query), operationName)?.operation === "subscription";
  } catch {
    return false; // not a document: the server will say why
  }
}

function fetcher(params, options = {}) {
  const headers = options.headers ?? {};
  return isSubscription(params) ? subscription(params, headers) : post(params, headers);
}

/** An Observable over its own connection, which ends with the subscription. */
function subscription(params, headers) {
  return {
    subscribe(observer) {
      const lost = (reason) => observer.error(new Error(reason));
      const socket = new Socket({ extraHeaders: headers, onClose: lost });
      const failed = (error) => {
        socket.close();
        // Errors the server sent are a result to show, not a broken fetcher.
        if (error.graphQLErrors) {
          observer.next({ errors: error.graphQLErrors });
          observer.complete();
        } else observer.error(error);
      };
      let stop = () => socket.close();
      socket.open().then(() => {
        const end = socket.subscribe(params.query, params.variables, {
          next: (result) => observer.next(result),
          error: failed,
          complete: () => {
            socket.close();
            observer.complete();
          },
        });
        stop = () => {
          end();
          socket.close();
        };
      }, failed);
      return { unsubscribe: () => stop() };
    },
  };
}

const root = ReactDOM.createRoot(document.getElementById("graphiql"));
root.render(
  React.createElement(GraphiQL, {
    fetcher,
    defaultQuery: EXAMPLE,
    plugins: [GraphiQLPluginExplorer.explorerPlugin()],
    isHeadersEditorEnabled: true,
    // Headers may hold a bearer token: keep them out of localStorage.
    shouldPersistHeaders: false,
    inputValueDeprecation: true,
  }),
);
