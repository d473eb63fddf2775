// Signs bodies with each provider's official SDK, the way the provider (or
// a Standard Webhooks sender) does, so the test can send them to hookbox.
// Request: {sdk, secret, body (base64), id}; answer: {headers}.
import Stripe from 'stripe';
import { Webhook as Svix } from 'svix';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { serve } from './sdk-rpc.mjs';

const stripe = new Stripe('sk_test_hookbox_interop');
const unix = (d) => String(Math.floor(d.getTime() / 1000));

serve({
  stripe: ({ secret }, body) => ({
    headers: { 'Stripe-Signature': stripe.webhooks.generateTestHeaderString({ payload: body.toString('utf8'), secret }) },
  }),
  svix: ({ secret, id }, body) => {
    const at = new Date();
    return { headers: { 'svix-id': id, 'svix-timestamp': unix(at), 'svix-signature': new Svix(secret).sign(id, at, body.toString('utf8')) } };
  },
  standardwebhooks: ({ secret, id }, body) => {
    const at = new Date();
    return { headers: { 'webhook-id': id, 'webhook-timestamp': unix(at), 'webhook-signature': new StandardWebhook(secret).sign(id, at, body.toString('utf8')) } };
  },
  // BigCommerce signs as Standard Webhooks with its client secret's raw bytes as the key.
  'standardwebhooks-raw': ({ secret, id }, body) => {
    const at = new Date();
    return { headers: { 'webhook-id': id, 'webhook-timestamp': unix(at), 'webhook-signature': new StandardWebhook(secret, { format: 'raw' }).sign(id, at, body.toString('utf8')) } };
  },
  octokit: async ({ secret, id }, body) => ({
    headers: { 'X-Hub-Signature-256': await octokitSign(secret, body.toString('utf8')), 'X-GitHub-Delivery': id, 'X-GitHub-Event': 'push' },
  }),
});
