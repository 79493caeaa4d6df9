'use client';
/**
 * A rolling, client-side history of overview polls, so the overview can chart
 * the last few minutes without a metrics backend. Kept above the pages so it
 * survives navigation.
 */
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import type { Overview } from '../lib/overview';
import { useSummary } from './use-summary';

/** Six minutes at one point per 2 s poll. */
const MAX_POINTS = 180;

export interface HistoryPoint {
  at: number;
  held: number;
  sessions: number;
  waiters: number;
  granted: number;
  contended: number;
  otherAcquire: number;
  contention: number;
  sessionLoss: number;
  availability: number | null;
}

const HistoryContext = createContext<HistoryPoint[]>([]);

export function toPoint(overview: Overview): HistoryPoint {
  const rates = overview.acquireRates;
  const granted = rates.granted ?? 0;
  const contended = (rates.contended ?? 0) + (rates.contention_exceeded ?? 0);
  const total = Object.values(rates).reduce((sum, v) => sum + v, 0);
  return {
    at: overview.at,
    held: overview.heldLocks,
    sessions: overview.activeSessions,
    waiters: overview.waiters,
    granted,
    contended,
    otherAcquire: Math.max(0, total - granted - contended),
    contention: overview.contentionRate,
    sessionLoss: overview.sessionLossRate,
    availability: overview.availability[0]?.ratio ?? null,
  };
}

export function HistoryProvider({ children }: { children: ReactNode }) {
  const { data } = useSummary();
  const [points, setPoints] = useState<HistoryPoint[]>([]);
  useEffect(() => {
    if (!data) return;
    setPoints((previous) => {
      if (previous.length > 0 && previous[previous.length - 1]!.at >= data.at) return previous;
      return [...previous, toPoint(data)].slice(-MAX_POINTS);
    });
  }, [data]);
  return <HistoryContext.Provider value={points}>{children}</HistoryContext.Provider>;
}

export function useHistory(): HistoryPoint[] {
  return useContext(HistoryContext);
}
