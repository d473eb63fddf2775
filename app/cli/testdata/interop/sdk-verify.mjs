// Verifies requests with each provider's official SDK, the way a merchant's
// app does, so the test can check what `hookbox sign` makes.
// Request: {sdk, secret, body (base64), headers (lower-case names, as
// Node's http module gives them), url, tolerance (Stripe's, optional)}; answer: {ok, reason, ...}.
import '@shopify/shopify-api/adapters/node';
import { shopifyApi, ApiVersion, LogSeverity } from '@shopify/shopify-api';
import { WebhooksHelper } from 'square';
import { Paddle } from '@paddle/paddle-node-sdk';
import Stripe from 'stripe';
import { Webhook as Svix } from 'svix';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { verify as octokitVerify } from '@octokit/webhooks-methods';
import { serve } from './sdk-rpc.mjs';

const stripe = new Stripe('sk_test_hookbox_interop');
const paddle = new Paddle('pdl_sdbx_apikey_01hookboxinterop');
const shopifies = new Map(); // one per secret
const shopify = (secret) => {
  if (!shopifies.has(secret)) {
    shopifies.set(secret, shopifyApi({
      apiKey: 'hookbox-interop', apiSecretKey: secret, scopes: [], hostName: 'localhost',
      apiVersion: ApiVersion.October26, isEmbeddedApp: false,
      logger: { level: LogSeverity.Error, log: async () => {} },
    }));
  }
  return shopifies.get(secret);
};

// thrown turns a verifier that throws on refusal into an answer.
const thrown = async (f) => {
  try {
    await f();
    return { ok: true };
  } catch (e) {
    return { ok: false, reason: String(e?.message ?? e) };
  }
};

serve({
  shopify: async ({ secret, headers, url }, body) => {
    // A request object as Node's http module makes it; the node adapter reads headers, method, url.
    const v = await shopify(secret).webhooks.validate({
      rawBody: body.toString('utf8'),
      rawRequest: { headers, method: 'POST', url },
      rawResponse: {},
    });
    return { ok: v.valid, reason: v.reason, missing: v.missingHeaders, type: v.webhookType, topic: v.topic, domain: v.domain, api_version: v.apiVersion, webhook_id: v.webhookId };
  },
  square: async ({ secret, headers, url }, body) => ({
    ok: await WebhooksHelper.verifySignature({
      requestBody: body.toString('utf8'), signatureHeader: headers['x-square-hmacsha256-signature'], signatureKey: secret, notificationUrl: url,
    }),
  }),
  paddle: ({ secret, headers }, body) => thrown(() => paddle.webhooks.unmarshal(body.toString('utf8'), secret, headers['paddle-signature'])),
  // tolerance (seconds) is the SDK's own default (300) unless the request sets one.
  stripe: ({ secret, headers, tolerance }, body) => thrown(() => stripe.webhooks.constructEvent(body, headers['stripe-signature'], secret, tolerance)),
  svix: ({ secret, headers }, body) => thrown(() => new Svix(secret).verify(body.toString('utf8'), headers)),
  standardwebhooks: ({ secret, headers }, body) => thrown(() => new StandardWebhook(secret).verify(body.toString('utf8'), headers)),
  'standardwebhooks-raw': ({ secret, headers }, body) => thrown(() => new StandardWebhook(secret, { format: 'raw' }).verify(body.toString('utf8'), headers)),
  octokit: async ({ secret, headers }, body) => ({ ok: await octokitVerify(secret, body.toString('utf8'), headers['x-hub-signature-256'] ?? '') }),
});
