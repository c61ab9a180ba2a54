/** The webhooks module's public face: its outbox dispatcher, its erase hook, the delivery loop, retention, its /metrics figures and the CLI receiver. */
export { sign } from './attempt.js';
export { DeliveryLoop } from './delivery.js';
export { eraseEndUserDeliveries, eraseMemoryDeliveries } from './erase.js';
export { fanOut } from './fan-out.js';
export type { WebhookSettings } from './endpoints.js';
export { listen } from './listen.js';
export { purgeEndedDeliveries, webhookBacklog } from './deliveries.js';
