/** The webhooks module's public face: its outbox dispatcher, its erase hook and the delivery loop. */
export { DeliveryLoop, eraseMemoryDeliveries, fanOut, sign } from './delivery.js';
export type { WebhookSettings } from './endpoints.js';
