// The demo page of the booking origin: pick seats, hold them, pay. It talks to the same API,
// through the waiting room, so a newcomer sees the whole flow in a browser.

export function demoPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Demo sale: pick your seats</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:0 auto;padding:1.5rem 1rem;color:#1c2030;background:#f6f7fb}
h1{font-size:1.4rem;margin:0 0 .5rem}.grid{display:grid;grid-template-columns:repeat(10,1fr);gap:.35rem;margin:1rem 0}
button.seat{padding:.5rem 0;border-radius:.4rem;border:1px solid #9aa3b8;background:#fff;font:inherit;font-size:.8rem;cursor:pointer}
button.seat[data-status=held]{background:#ffe7a3;cursor:not-allowed}button.seat[data-status=sold]{background:#d5d9e3;color:#777;cursor:not-allowed}
button.seat[aria-pressed=true]{background:#3056d3;color:#fff;border-color:#3056d3}
.actions button{font:inherit;padding:.6rem 1rem;border-radius:.5rem;border:0;background:#3056d3;color:#fff;margin-right:.5rem}
#message{min-height:1.5em;font-weight:600}
</style></head>
<body><main>
<h1 id="title">Demo sale</h1>
<p>You are through the waiting room. Pick up to 4 seats, hold them for a few minutes, then pay (a test payment).</p>
<div class="grid" id="seats" aria-label="Seat map"></div>
<div class="actions"><button id="hold">Hold seats</button><button id="pay" disabled>Pay</button><button id="release" disabled>Release</button></div>
<p id="message" role="status" aria-live="polite"></p>
</main>
<script>
(function(){
var event=new URLSearchParams(location.search).get('event')||'demo',picked=new Set(),hold=null,msg=document.getElementById('message');
function say(t){msg.textContent=t}
function api(method,path,body,headers){return fetch(path,{method:method,headers:Object.assign({'content-type':'application/json',accept:'application/json'},headers||{}),body:body?JSON.stringify(body):undefined,credentials:'same-origin'}).then(function(r){return r.json().then(function(j){return{status:r.status,body:j}})})}
function load(){api('GET','/events/'+event+'/seats').then(function(r){if(r.status!==200){say(r.body.error?r.body.error.message:'Could not load seats');return}
document.getElementById('title').textContent=r.body.event.name;var g=document.getElementById('seats');g.textContent='';
r.body.seats.forEach(function(s){var b=document.createElement('button');b.className='seat';b.textContent=s.seat;b.dataset.status=s.status;b.setAttribute('aria-pressed',picked.has(s.seat)?'true':'false');
b.disabled=s.status!=='free'&&!picked.has(s.seat);b.onclick=function(){if(picked.has(s.seat))picked.delete(s.seat);else picked.add(s.seat);b.setAttribute('aria-pressed',picked.has(s.seat)?'true':'false')};g.appendChild(b)})})}
document.getElementById('hold').onclick=function(){api('POST','/events/'+event+'/holds',{seats:Array.from(picked)}).then(function(r){
if(r.status===201){hold=r.body.hold;say('Held '+hold.seats.join(', ')+' until '+new Date(hold.expiresAt).toLocaleTimeString());document.getElementById('pay').disabled=false;document.getElementById('release').disabled=false}
else say(r.body.error.message+(r.body.error.nearest&&r.body.error.nearest.length?' Nearest free: '+r.body.error.nearest.join(', '):''));picked.clear();load()})};
document.getElementById('pay').onclick=function(){if(!hold)return;var key='demo-'+hold.id;api('POST','/holds/'+hold.id+'/confirm',null,{'idempotency-key':key}).then(function(r){
if(r.status===200)say('Booked: '+r.body.tickets.map(function(t){return t.seat}).join(', ')+'. Charge '+r.body.chargeId+'.');else say(r.body.error.message);hold=null;document.getElementById('pay').disabled=true;document.getElementById('release').disabled=true;load()})};
document.getElementById('release').onclick=function(){if(!hold)return;api('DELETE','/holds/'+hold.id).then(function(r){say(r.status===200?'Released.':r.body.error.message);hold=null;document.getElementById('pay').disabled=true;document.getElementById('release').disabled=true;load()})};
load()})()
</script></body></html>`
}
