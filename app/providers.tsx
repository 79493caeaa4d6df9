'use client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { shouldRetry } from './lib/client/api';
import { LiveProvider } from './components/live';

export function Providers({ children }: { children: ReactNode }) {
  // One client per browser tab; created in state so a re-render never drops the cache.
  const [client] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            retry: shouldRetry,
            retryDelay: 1000,
            refetchOnWindowFocus: true,
            staleTime: 1000,
          },
        },
      }),
  );
  return (
    <QueryClientProvider client={client}>
      <LiveProvider>{children}</LiveProvider>
    </QueryClientProvider>
  );
}
