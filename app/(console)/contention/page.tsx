import type { Metadata } from 'next';
import { ContentionView } from './contention-view';

export const metadata: Metadata = { title: 'Contention' };

export default function ContentionPage() {
  return <ContentionView />;
}
