import type { Metadata } from 'next';
import { Suspense } from 'react';
import { LeadersView } from './leaders-view';

export const metadata: Metadata = { title: 'Leaders' };

export default function LeadersPage() {
  return (
    <Suspense>
      <LeadersView />
    </Suspense>
  );
}
