// Consumer search by UUID: where a consumer is booked, and for how much on each host.
// A migrating consumer is booked on two hosts; each booking is listed, never summed.

import { h } from "./dom.js";
import { query } from "./graphql.js";
import { formatAmount } from "./format.js";

const CONSUMER = `query Consumer($uuid: UUID!) { consumer(uuid: $uuid) {
  uuid migrating projectId consumerType
  bookings { hypervisor { name } resources { name amount } } } }`;

export class ConsumerSearch {
  #uuid = null;

  constructor({ form, input, output }) {
    Object.assign(this, { input, output });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.#uuid = input.value.trim();
      this.refresh();
    });
  }

  /** Look the current UUID up again (the fleet changed). */
  async refresh() {
    const uuid = this.#uuid;
    if (!uuid) return;
    let content;
    try {
      const { consumer } = await query(CONSUMER, { uuid });
      content = consumer
        ? result(consumer)
        : h("p", { class: "muted" }, `No consumer ${uuid} is booked anywhere.`);
    } catch (error) {
      content = h("p", { class: "error" }, `Search failed: ${error.message}`);
    }
    if (uuid === this.#uuid) this.output.replaceChildren(content);
  }
}

function result(consumer) {
  return h(
    "div",
    { class: "consumer", dataset: { uuid: consumer.uuid } },
    h(
      "p",
      {},
      h("code", {}, consumer.uuid),
      consumer.migrating && h("span", { class: "badge warning" }, "migrating"),
      consumer.projectId && [" project ", h("code", {}, consumer.projectId)],
      consumer.consumerType && [" · ", consumer.consumerType],
    ),
    h(
      "table",
      { class: "bookings" },
      h("thead", {}, h("tr", {}, h("th", {}, "Hypervisor"), h("th", {}, "Resources"))),
      h(
        "tbody",
        {},
        consumer.bookings.map((booking) =>
          h(
            "tr",
            { dataset: { hypervisor: booking.hypervisor.name } },
            h("td", {}, booking.hypervisor.name),
            h(
              "td",
              {},
              booking.resources
                .map((r) => `${r.name} ${formatAmount(r.name, r.amount)}`)
                .join(", "),
            ),
          ),
        ),
      ),
    ),
  );
}
