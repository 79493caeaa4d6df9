import type { Metadata } from 'next';
import { Suspense } from 'react';
import { LocksView } from './locks-view';

export const metadata: Metadata = { title: 'Locks' };

export default function LocksPage() {
  return (
    <Suspense>
      <LocksView />
    </Suspense>
  );
}
