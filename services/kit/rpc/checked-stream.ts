/**
 * A streamed request's messages, each checked as the handler reads it: the first message
 * `refusal` answers an error for ends the stream with that error (the interceptors of
 * request-guard.ts and validation.ts).
 */
export async function* checkedStream<M>(messages: AsyncIterable<M>, refusal: (msg: M) => Error | undefined): AsyncIterable<M> {
  for await (const msg of messages) {
    const err = refusal(msg);
    if (err) throw err;
    yield msg;
  }
}
