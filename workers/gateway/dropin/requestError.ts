// The refusal of a drop-in request before anything is stored (issue #12): a 400 naming the request field, which each
// dialect answers as its own `param` (OpenAI) or in its message (Anthropic).
import { InvalidRequestError } from '../errors.js';

/** A request refused before anything is stored, naming the request field (the dialect's `param`). */
export class DropinRequestError extends InvalidRequestError {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}
