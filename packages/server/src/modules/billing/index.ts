/** The billing module's public face. */
export { currentPlan, monthlyTurnLimit, PLANS, setPlan } from './service.js';
