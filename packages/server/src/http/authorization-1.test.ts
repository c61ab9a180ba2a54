import { authorizationMatrix } from '../testing/authorization-matrix.js';

// The authorization matrix (testing/authorization-matrix.ts), share 1 of 2: the shares run side by side.
authorizationMatrix(0, 2);
