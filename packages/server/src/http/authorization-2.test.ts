import { authorizationMatrix } from '../testing/authorization-matrix.js';

// The authorization matrix (testing/authorization-matrix.ts), share 2 of 2: the shares run side by side.
authorizationMatrix(1, 2);
