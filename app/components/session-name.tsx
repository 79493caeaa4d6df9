/** A session as its owner (what people recognise) over its id (what the CLI and logs name). */
export function SessionName({ sessionId, owner }: { sessionId: string; owner: string | undefined }) {
  return (
    <>
      {owner !== undefined ? <span data-testid="session-owner">{owner}</span> : null}
      <div className="mono muted">{sessionId}</div>
    </>
  );
}
