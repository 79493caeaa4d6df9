'use client';
/**
 * Live refresh: one pause switch for every polling query, the refresh interval,
 * and the "updated N s ago" readout.
 */
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { formatAbsolute } from '../lib/format';

/** Every live view refreshes this often; a new lock shows up within one interval. */
export const REFRESH_INTERVAL_MILLIS = 2_000;

interface LiveState {
  paused: boolean;
  setPaused(paused: boolean): void;
}

const LiveContext = createContext<LiveState>({ paused: false, setPaused: () => undefined });

export function LiveProvider({ children }: { children: ReactNode }) {
  const [paused, setPaused] = useState(false);
  return <LiveContext.Provider value={{ paused, setPaused }}>{children}</LiveContext.Provider>;
}

export function useLive(): LiveState & { refetchInterval: number | false } {
  const state = useContext(LiveContext);
  return { ...state, refetchInterval: state.paused ? false : REFRESH_INTERVAL_MILLIS };
}

/** Current time, re-read every `everyMillis` so countdowns and "N s ago" tick. */
export function useNow(everyMillis = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMillis);
    return () => clearInterval(timer);
  }, [everyMillis]);
  return now;
}

export function LiveControl({ updatedAt, fetching, failing }: { updatedAt: number; fetching: boolean; failing: boolean }) {
  const { paused, setPaused } = useLive();
  const now = useNow();
  const age = updatedAt > 0 ? Math.max(0, Math.floor((now - updatedAt) / 1000)) : null;
  const state = paused ? 'paused' : failing ? 'stale' : 'live';
  return (
    <div className="live" data-testid="live-control">
      <span className={`live-dot live-${state}`} aria-hidden="true" />
      <span data-testid="updated-ago" title={updatedAt > 0 ? `last good data ${formatAbsolute(updatedAt)}` : undefined}>
        {age === null ? 'loading…' : `updated ${age} s ago`}
        {paused ? ' · paused' : fetching ? ' · refreshing' : ''}
      </span>
      <button type="button" className="button small" onClick={() => setPaused(!paused)} aria-pressed={paused}>
        {paused ? 'Resume' : 'Pause'}
      </button>
    </div>
  );
}
