'use client';
/** Polling queries of the insight routes, shared by the overview cards and their pages. */
import { useQuery } from '@tanstack/react-query';
import type { LockInfo, Page } from '../lib/api-types';
import { getJson } from '../lib/client/api';
import type { ContentionTop, LockHistory, WaitGraph } from '../lib/insight-types';
import { useLive } from './live';

export function useContention(limit: number) {
  const { refetchInterval } = useLive();
  return useQuery({
    queryKey: ['contention', limit],
    queryFn: ({ signal }) => getJson<ContentionTop>(`/api/contention?limit=${limit}`, signal),
    refetchInterval,
  });
}

/** The oldest grants store-wide (A1 sort=age), oldest first. */
export function useHeldLongest(limit: number) {
  const { refetchInterval } = useLive();
  return useQuery({
    queryKey: ['locks', 'held-longest', limit],
    queryFn: ({ signal }) => getJson<Page<LockInfo>>(`/api/locks?sort=age&limit=${limit}`, signal),
    refetchInterval,
  });
}

export function useWaitGraph() {
  const { refetchInterval } = useLive();
  return useQuery({
    queryKey: ['waits'],
    queryFn: ({ signal }) => getJson<WaitGraph>('/api/waits', signal),
    refetchInterval,
  });
}

export function useLockHistory(key: string) {
  const { refetchInterval } = useLive();
  return useQuery({
    queryKey: ['lock-history', key],
    queryFn: ({ signal }) => getJson<LockHistory>(`/api/locks/${encodeURIComponent(key)}/history`, signal),
    refetchInterval,
  });
}
