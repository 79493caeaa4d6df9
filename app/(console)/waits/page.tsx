import type { Metadata } from 'next';
import { WaitsView } from './waits-view';

export const metadata: Metadata = { title: 'Waits' };

export default function WaitsPage() {
  return <WaitsView />;
}
