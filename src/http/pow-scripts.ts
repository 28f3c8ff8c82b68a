// Proof of work's two scripts (core/pow.ts): the solver a Web Worker runs (served from
// POW_WORKER_PATH) and the challenge page's own, inline under a CSP hash that the edge works out once
// (edge-context.ts powScriptHash). Apart from pow.ts so that the edge's context needs nothing of the
// page that uses them.
import { POW_HEADER } from '../core/pow.js'

export const POW_WORKER_PATH = '/_anteroom/pow-worker.js'

/**
 * The solver: hashes <challenge>.<n in base 36> for n = start, start + step, ... until one has enough
 * leading zero bits, 64 digests at a time (about 4 µs a hash in headless Chromium, against 6 µs one at
 * a time). The page runs one per core (at most 4), each on its own share of the nonces.
 */
export const POW_WORKER_SCRIPT = `'use strict';
function zeros(h){var b=0;for(var i=0;i<h.length;i++){if(h[i]!==0)return b+Math.clz32(h[i])-24;b+=8}return b}
onmessage=async function(e){var c=e.data.challenge,d=e.data.difficulty,start=e.data.start||0,step=e.data.step||1,enc=new TextEncoder(),t0=performance.now();
for(var i=0;;i+=64){var batch=[];for(var k=0;k<64;k++)batch.push(crypto.subtle.digest('SHA-256',enc.encode(c+'.'+(start+(i+k)*step).toString(36))));
var hashes=await Promise.all(batch);for(k=0;k<64;k++){if(zeros(new Uint8Array(hashes[k]))>=d){postMessage({answer:c+'.'+(start+(i+k)*step).toString(36),hashes:i+k+1,ms:performance.now()-t0});return}}}};`

/**
 * The challenge page's script: solves in the workers, sends the answer with the status request (which
 * sets the queue cookie), then reloads into the queue page. A refused answer comes with a new
 * challenge, solved again (twice at most). The solve time goes into data-solve-ms.
 */
export const POW_PAGE_SCRIPT = `(function(){var el=document.getElementById('anteroom');if(!el)return;
var room=el.getAttribute('data-room'),tries=0,st=document.getElementById('pow-state'),W={};try{W=JSON.parse(el.getAttribute('data-words')||'{}')}catch(e){}
function say(t,k){if(st)st.textContent=W[k]||t}
function later(){setTimeout(function(){location.reload()},Number(el.getAttribute('data-refresh'))*1000)}
function solve(ch){say('Working\\u2026','working');var n=Math.min(4,Math.max(1,navigator.hardwareConcurrency||1)),ws=[],done=false;
function stop(){for(var i=0;i<ws.length;i++)ws[i].terminate()}
function broken(){stop();say('Your browser could not run the check. Please reload the page.','broken')}
try{for(var i=0;i<n;i++)ws.push(new Worker('${POW_WORKER_PATH}'))}catch(e){broken();return}
ws.forEach(function(w,i){w.onerror=broken;w.onmessage=function(e){if(done)return;done=true;stop();el.setAttribute('data-solve-ms',String(Math.round(e.data.ms)));send(e.data.answer)};
w.postMessage({challenge:ch.value,difficulty:ch.difficulty,start:i,step:n})})}
function send(answer){fetch('/_anteroom/status?room='+encodeURIComponent(room),{headers:{accept:'application/json','${POW_HEADER}':answer},credentials:'same-origin',cache:'no-store'})
.then(function(r){return r.json().then(function(b){return{ok:r.ok,b:b}})}).then(function(x){var b=x.b||{};
if(b.state&&b.state!=='challenge'){say('Done.','done');if(x.ok)location.reload();else later();return}
var ch=b.error&&b.error.challenge;if(ch&&++tries<3){solve(ch);return}
say('The check did not go through. Please reload the page.','failed')}).catch(function(){say('The waiting room did not answer; trying again shortly.','retry');later()})}
solve({value:el.getAttribute('data-challenge'),difficulty:Number(el.getAttribute('data-difficulty'))})})()`
