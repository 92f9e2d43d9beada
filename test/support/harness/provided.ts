// Values the global setup provides to every integration test file (read them with `inject(...)`).
import 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    temporalAddress: string;
    temporalNamespace: string;
  }
}
