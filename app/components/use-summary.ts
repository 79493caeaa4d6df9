'use client';
import { useQuery } from '@tanstack/react-query';
import { getJson } from '../lib/client/api';
import type { Overview } from '../lib/overview';
import { useLive } from './live';

/** The A5 overview, polled while live; shared by the shell's connection banner and the overview page. */
export function useSummary() {
  const { refetchInterval } = useLive();
  return useQuery({
    queryKey: ['summary'],
    queryFn: ({ signal }) => getJson<Overview>('/api/summary', signal),
    refetchInterval,
    refetchIntervalInBackground: false,
    retry: false,
  });
}
