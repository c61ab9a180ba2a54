/** The webhooks module's public face: its outbox dispatcher, its erase hook, the delivery loop, retention, its /metrics figures and the CLI receiver. */
export { DeliveryLoop, eraseEndUserDeliveries, eraseMemoryDeliveries, fanOut, sign } from './delivery.js';
export type { WebhookSettings } from './endpoints.js';
export { listen } from './listen.js';
export { purgeEndedDeliveries, webhookBacklog } from './deliveries.js';
