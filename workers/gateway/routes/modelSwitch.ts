// The model switch of a conversation (tenant key; SPEC §4.6, issue #14 §3): `POST /v1/conversations/:id/model`.
// The window is resolved and checked here first (SPEC §4.3 an unknown -900k alias, §4.4 a window below 64,000:
// 400 naming `model` or `contextLength`, nothing changes); then the workflow re-derives every threshold from the raw
// configuration and says so (the §4.6 cache warning, the §4.5 autoraise notice). A context larger than the new
// model's threshold compacts before the next turn (the preflight of SPEC §7.6, and the hygiene of §11 above 85 %).
// Schemas: contracts/http/modelSwitch.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses, TENANT_WRITE_ERRORS } from '../../../contracts/http/common.js';
import { ConversationParams } from '../../../contracts/http/conversations.js';
import { SwitchModelBody } from '../../../contracts/http/modelSwitch.js';
import { ConversationStatusBody } from '../../../contracts/http/status.js';
import { ContextWindowTooSmallError, resolveUsableContextLength } from '../../../engine/modelRegistry.js';
import { requireTenant, type TenantRouteGate, tenantGate } from '../auth.js';
import type { Conversations } from '../conversations.js';
import { InvalidRequestError } from '../errors.js';

export interface ModelSwitchRouteDeps extends TenantRouteGate {
  conversations: Conversations;
}

export function modelSwitchRoutes(deps: ModelSwitchRouteDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    requireTenant(app, tenantGate(deps, deps.conversations.pendingWrites));

    app.post(
      '/v1/conversations/:conversationId/model',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'Switch the model (and provider, window) of a conversation (SPEC §4.6): thresholds re-derived, the cache ' +
            'warning among the notices; a context over the new threshold compacts before the next turn',
          params: ConversationParams,
          body: SwitchModelBody,
          response: { 200: ConversationStatusBody, ...errorResponses(...TENANT_WRITE_ERRORS, 404, 422) },
        },
      },
      async (request) => {
        const { model, provider, contextLength } = request.body;
        try {
          resolveUsableContextLength(model, provider ?? null, contextLength ?? null);
        } catch (err) {
          // SPEC §4.3 names the model; §4.4 the window, which the caller gave or the model implies.
          const field =
            err instanceof ContextWindowTooSmallError && contextLength !== undefined ? 'contextLength' : 'model';
          throw new InvalidRequestError(`${field}: ${(err as Error).message}`);
        }
        return deps.conversations.switchModel(request.tenantId, request.params.conversationId, {
          model,
          ...(provider !== undefined ? { provider } : {}),
          ...(contextLength !== undefined ? { contextLength } : {}),
        });
      },
    );
  };
}
