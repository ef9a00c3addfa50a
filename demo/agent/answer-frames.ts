/** Answers above this many bytes are sent in chunks: API Gateway takes at most 128 KB per message. */
export const chunkBytes = 100 * 1024;

/**
 * The messages that carry an answer: itself when it fits in `limit` bytes, else chunks
 * { requestId, chunk, chunks, data } whose `data`, concatenated in chunk order, is the answer's JSON
 * text; each chunk message fits in `limit` bytes (pieces are cut between characters, never inside a surrogate pair).
 */
export function answerFrames(reply: object, limit = chunkBytes): string[] {
  const text = JSON.stringify(reply);
  if (Buffer.byteLength(text) <= limit) return [text];
  // A script run's answer names its run item instead of a request (docs/scripts.md "Runs").
  const id =
    'runItemId' in reply ? { runItemId: reply.runItemId } : { requestId: (reply as { requestId: string }).requestId };
  const frame = (chunk: number, chunks: number, data: string) => JSON.stringify({ ...id, chunk, chunks, data });
  const pieces: string[] = [];
  let at = 0;
  while (at < text.length) {
    // Escaping may grow a piece; shrink the cut until the message fits (the indices are sized at two digits).
    let end = Math.min(text.length, at + limit);
    for (;;) {
      if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1;
      const size = Buffer.byteLength(frame(99, 99, text.slice(at, end)));
      if (size <= limit) break;
      end = at + Math.max(1, Math.floor((end - at) * (limit / size) * 0.98));
    }
    pieces.push(text.slice(at, end));
    at = end;
  }
  return pieces.map((data, chunk) => frame(chunk, pieces.length, data));
}
