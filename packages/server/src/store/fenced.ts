/** A write of a turn whose claim was taken over by another instance (its fencing token is stale): refused. */
export class FencedError extends Error {
  constructor(
    readonly sessionId: string,
    readonly epoch: number,
  ) {
    super(`session ${sessionId} was taken over: the claim with lease epoch ${epoch} is no longer valid`);
  }
}
