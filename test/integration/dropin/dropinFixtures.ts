// Shared by the drop-in tests (issue #12): what the gateway stores of a conversation, as a client reads it back.
import { expect } from 'vitest';
import type { GatewayHarness } from '../../support/harness/gateway.js';

/** Every stored message of the conversation (active and archived), as GET …/messages?archived=true lists them. */
export async function storedMessages(
  gw: GatewayHarness,
  key: string,
  conversationId: string,
): Promise<Array<Record<string, any>>> {
  const res = await gw.call('GET', `/v1/conversations/${conversationId}/messages?archived=true`, key);
  expect(res.status, res.text).toBe(200);
  return res.json.messages.map((m: { message: Record<string, any> }) => m.message);
}
