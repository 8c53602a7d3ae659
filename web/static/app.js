// The demo page's entry point: each card is its own module.

import {initCall} from './call.js';
import {initRTC} from './rtc.js';
import {initStages} from './stages.js';
import {initBurst} from './burst.js';
import {initAgent} from './agent.js';

initCall();
initRTC();
initStages();
initBurst();
initAgent();
