// Strings for vwr's waiting pages in English and Korean. The language comes
// from ?lang= when present, else the urr-lang cookie (the visitor's earlier
// choice, on any page of the site), else navigator.language; anything else is
// English. A ?lang= choice is kept in the cookie, so it follows the visitor
// from the waiting room to the queue and the site behind it.

const en = {
  'brand': 'Virtual waiting room',
  'title.tier1': 'You are in the waiting room',
  'lead.tier1': 'Demand is high right now. We are letting people in a few at a time, in the order they arrived. Your place is saved, so you can keep this tab open in the background.',
  'title.tier2': 'You are in line for this event',
  'lead.tier2': 'You are through the waiting room. This second, shorter line is for seat selection: only a few people choose seats at a time, and you go in as soon as one of them finishes.',
  'event': 'Event',
  'yourNumber': 'Your number in line',
  'position': 'Your place',
  'serving': 'Now admitting',
  'ahead': 'Ahead of you',
  'behind': 'Behind you',
  'wait': 'Estimated wait',
  'users': 'Choosing seats now',
  'room.count': (a, b) => `${a} of ${b} places taken`,
  'room.full': 'All places are taken: the next person goes in when someone finishes.',
  'room.open': 'There is room: people are going in now.',
  'progress.mine': 'Your progress in this line',
  'progress': 'Progress',
  'updated': 'Last updated',
  'never': 'not yet',
  'calculating': 'Calculating…',
  'lessThanMinute': '< 1 min',
  'minutes': (n) => `${n} min`,
  'hours': (h, m) => `${h}h ${m}m`,
  'seconds': (n) => `${n} s`,
  'range.soon': 'less than a minute',
  'range.minutes': (lo, hi) => `about ${lo}–${hi} minutes`,
  'range.hours': (lo, hi) => `about ${lo}–${hi} hours`,
  'range.afterDraw': 'after the draw',
  'range.paused': (r) => `paused (${r} once it resumes)`,
  'aboutN': (n) => `about ${n}`,
  'progress.text': (pct) => `${pct} % of the line ahead of you is through`,
  'status.paused': 'Admissions are paused for a moment. Your place is kept; keep this page open.',
  'announce.wait': (r, pct) => `Estimated wait ${r}. ${pct} % of the line ahead of you is through.`,
  'justNow': 'just now',
  'agoSeconds': (n) => `${n} s ago`,
  'status.joining': 'Getting your place in line…',
  'status.checking': 'Checking your browser…',
  'err.crowdedNetwork': (s) => `Many people on your network are joining this line right now. Retrying in ${s} s.`,
  'status.waiting': 'You are in line. This page updates by itself.',
  'status.almost': 'You are next. Checking you in…',
  'status.admitted': 'It is your turn! Taking you to the event…',
  'status.passThrough': 'No wait right now. Taking you to the event…',
  'status.queued': 'You are in line. This page updates by itself.',
  'status.recovering': 'The queue is restoring its line after a fault. Keep this page open: your place is kept and admissions resume shortly.',
  'status.active': 'It is your turn! Taking you to seat selection…',
  'status.left': 'You are no longer in line. Your place has been given to the next person.',
  'status.done.left': 'You left this line earlier. To come back, join the line again: you get a new place at the back.',
  'status.done.slot_ended': 'Your turn has ended. To come back, join the line again: you get a new place at the back.',
  'status.done.idle': 'Your turn was given to the next person because this page stopped answering. Join the line again for a new place.',
  'status.rejoin': 'Join the line again',
  'status.leaving': 'Leaving the line…',
  'status.needPass': 'Your waiting-room pass has expired. Taking you back to get a new one…',
  'err.network': (s) => `We cannot reach the waiting room. Check your connection — retrying in ${s} s. Your place is kept.`,
  'err.busy': (s) => `The waiting room is very busy. Your place is kept — retrying in ${s} s.`,
  'err.bad': 'This link is not valid. Please go back to the event page and try again.',
  'err.unknownEvent': (s) => `This event is not taking visitors right now. Trying again in ${s} s.`,
  'err.refused': (s) => `The waiting room did not accept the request. Trying again in ${s} s.`,
  'action.retry': 'Try again',
  'action.home': 'Go to the home page',
  'err.cookies': 'It is your turn, but your browser is not keeping our cookies. Please allow cookies for this site and reload.',
  'err.generic': (s) => `Something went wrong on our side. Retrying in ${s} s. Your place is kept.`,
  'keepOpen': 'Keep this tab open. Refreshing is safe: you keep your place in line.',
  'doNotClose': 'Do not close this page. Leaving it for too long gives your place to the next person.',
  'leave': 'Leave queue',
  'leave.ask': (p) => `Leave the line? Your place (${p}) goes to the next person, and you cannot get it back.`,
  'leave.confirm': 'Yes, leave the line',
  'leave.stay': 'Stay in line',
  'title.left': 'You left the line',
  'lead.left': 'Your place went to the next person. Changed your mind? You can join the line again.',
  'title.done': 'Your turn in this line is over',
  'lead.done': 'This place in line has been used. To come back, join the line again: you get a new place.',
  'leaveHint': 'Changed your mind? Leaving frees your place for someone else.',
  'footer': 'A fair waiting room by vwr.',
  'announce.position': (p, a) => `Your place in line is ${p}. ${a} people ahead of you.`,
  'announce.tier2': (p, a) => `Your place in line is ${p}. ${a} people ahead of you.`,
  'of': (a, b) => `${a} of ${b}`,
  'err.notOpen': 'The pre-queue for this sale has not opened yet. This page will join it by itself when it opens.',
  'title.prequeue': (time) => `The sale opens at ${time}`,
  'lead.prequeue': 'Everyone here by then gets a random place in line. Arriving earlier or refreshing does not change your chances.',
  'title.drawing': 'Drawing places now',
  'lead.drawing': (time) => `The sale opened at ${time}. Everyone who was here is getting a random place; this takes a few seconds.`,
  'title.drawn': 'Your place is drawn',
  'lead.drawn': (p) => `You are number ${p} in line. People go in in that order, a few at a time, and this page takes you in when it is your turn.`,
  'pq.title': 'How places are drawn',
  'pq.lead': 'At the opening the list closes and the order is drawn by lottery, from a public random number that nobody knows in advance. Keep this page open; it moves on by itself.',
  'pq.drawingNow': 'The list is closed. Places are being drawn now…',
  'pq.opensIn': 'Opens in',
  'pq.round': 'Drawn with public beacon round',
  'pq.countdown': (h, m, s) => (h > 0 ? `${h} h ${m} min ${s} s` : m > 0 ? `${m} min ${s} s` : `${s} s`),
  'status.prequeue': 'You are in the draw. Keep this page open; it updates by itself.',
  'status.drawing': 'The list is closed. Waiting for the public random number, then everyone\'s place is drawn. This takes a few seconds.',
  'status.drawn': (p) => `The draw is done: your place is ${p}.`,
  'announce.prequeue': 'You are in the pre-queue. The order is drawn when the sale opens.',
  'announce.drawing': 'The pre-queue is closed. The draw happens in a few seconds.',
  'err.cancelled': 'This sale was cancelled by the organiser, so there is no draw. Your receipt stays in this browser.',
  'receipt.title': 'Your draw receipt',
  'receipt.code': 'Receipt code',
  'receipt.kept': 'Saved in this browser. It lets you check the draw later.',
  'receipt.waitingSeal': 'At the opening the list of tickets is sealed. This browser notes when it sees the seal, which proves the list was fixed before the draw.',
  'receipt.sealed': (seen, draw) => `This browser saw the list of tickets sealed at ${seen}, before the draw's random number came out at ${draw}.`,
  'receipt.sealedLate': 'This browser saw the sealed list only after the draw\'s random number came out, so it cannot prove that the list was sealed in time.',
  'receipt.verify': 'Verify my place',
  'receipt.download': 'Download receipt',
  'receipt.details': 'Show details',
  'receipt.ticket': 'Ticket (SHA-256 of your request id and this browser\'s secret)',
  'receipt.root': 'Sealed list (commitment R)',
  'receipt.seen': 'Seal first seen by this browser',
  'receipt.round': 'Public random number (drand round)',
  'verify.checking': 'Checking the published draw in this browser…',
  'verify.ok': (p, n) => `Checked in this browser: your place is ${p} of ${n}.`,
  'verify.bad': 'This browser could not confirm the draw. Keep your receipt (Download receipt) and send it to the organiser.',
  'verify.error': 'The draw could not be checked right now. Please try again in a moment.',
  'verify.limits': 'What no browser can check: whether the tickets in the list came from real people, and other visitors\' clocks. The rules of the draw, and a tool for experts, are explained in',
  'verify.docs': 'How the draw works',
  'check.ticket': 'The ticket is yours: it matches a secret only this browser holds.',
  'check.ticket.bad': 'The ticket does not match this browser\'s secret.',
  'check.drawn': 'The draw is published.',
  'check.drawn.bad': 'The draw is not published yet.',
  'check.chain.quicknet': 'The random number comes from drand quicknet, the public beacon of the League of Entropy.',
  'check.chain.local': 'The random number comes from a test beacon this site runs itself, NOT the public drand beacon: whoever runs it could know the result in advance.',
  'check.chain.unknown': 'The random number does not come from the public drand beacon.',
  'check.beacon': (r) => `Round ${r} of the beacon carries a valid signature: nobody could have chosen it.`,
  'check.beacon.bad': (r) => `Round ${r} of the beacon is not validly signed.`,
  'check.timing': 'By the published times, the list was sealed before the random number came out.',
  'check.timing.bad': 'By the published times, the list was sealed too late.',
  'check.sealed': 'This browser itself saw the sealed list before the random number came out.',
  'check.sealed.noR': 'This browser never saw the sealed list before the draw, so it cannot prove that the list was sealed in time.',
  'check.sealed.Rchanged': 'The sealed list changed after this browser saw it.',
  'check.sealed.Rseenlate': 'This browser saw the sealed list only after the random number came out, so it cannot prove that the list was sealed in time.',
  'check.list': 'The published list of tickets matches the seal.',
  'check.list.bad': 'The published list of tickets does not match the seal.',
  'check.included': 'Your ticket is in the list.',
  'check.included.bad': 'Your ticket is not in the list.',
  'check.order': (p) => `Every place was recomputed from the list and the random number. Yours is ${p}.`,
  'check.order.bad': (p) => `Recomputing the places gives you ${p}, which is not what was published.`,
  'lang.switch': '한국어',
};

const ko = {
  'brand': '가상 대기실',
  'title.tier1': '대기실에 입장했습니다',
  'lead.tier1': '지금 접속자가 많습니다. 도착한 순서대로 조금씩 입장시키고 있습니다. 순번은 저장되어 있으니 이 탭을 백그라운드에 열어 두셔도 됩니다.',
  'title.tier2': '이 공연의 대기열에 있습니다',
  'lead.tier2': '대기실을 통과했습니다. 이 두 번째 짧은 줄은 좌석 선택을 위한 줄입니다. 한 번에 몇 분만 좌석을 고를 수 있어서, 앞 분이 끝나는 대로 입장합니다.',
  'event': '공연',
  'yourNumber': '나의 대기 번호',
  'position': '나의 순번',
  'serving': '입장 중인 번호',
  'ahead': '내 앞',
  'behind': '내 뒤',
  'wait': '예상 대기 시간',
  'users': '좌석 선택 중',
  'room.count': (a, b) => `${b}자리 중 ${a}자리 사용 중`,
  'room.full': '자리가 모두 찼습니다. 앞 분이 끝나면 다음 분이 입장합니다.',
  'room.open': '자리가 있습니다. 지금 입장하고 있습니다.',
  'progress.mine': '이 줄에서 나의 진행률',
  'progress': '진행률',
  'updated': '마지막 갱신',
  'never': '아직 없음',
  'calculating': '계산 중…',
  'lessThanMinute': '1분 미만',
  'minutes': (n) => `약 ${n}분`,
  'hours': (h, m) => `${h}시간 ${m}분`,
  'seconds': (n) => `${n}초`,
  'range.soon': '1분 이내',
  'range.minutes': (lo, hi) => `약 ${lo}–${hi}분`,
  'range.hours': (lo, hi) => `약 ${lo}–${hi}시간`,
  'range.afterDraw': '추첨 후 결정',
  'range.paused': (r) => `일시 정지 (재개 후 ${r})`,
  'aboutN': (n) => `약 ${n}`,
  'progress.text': (pct) => `내 앞 대기열의 ${pct}%가 입장했습니다`,
  'status.paused': '입장이 잠시 중단되었습니다. 순번은 유지되니 이 페이지를 열어 두세요.',
  'announce.wait': (r, pct) => `예상 대기 시간 ${r}. 내 앞 대기열의 ${pct}%가 입장했습니다.`,
  'justNow': '방금',
  'agoSeconds': (n) => `${n}초 전`,
  'status.joining': '순번을 받는 중입니다…',
  'status.checking': '브라우저를 확인하는 중…',
  'err.crowdedNetwork': (s) => `지금 같은 네트워크에서 많은 분이 이 대기열에 들어오고 있습니다. ${s}초 후 다시 시도합니다.`,
  'status.waiting': '대기 중입니다. 이 페이지는 자동으로 갱신됩니다.',
  'status.almost': '곧 차례입니다. 입장을 확인하는 중…',
  'status.admitted': '입장 차례입니다! 공연 페이지로 이동합니다…',
  'status.passThrough': '지금은 대기가 없습니다. 공연 페이지로 이동합니다…',
  'status.queued': '대기 중입니다. 이 페이지는 자동으로 갱신됩니다.',
  'status.recovering': '장애 후 대기열을 복구하고 있습니다. 이 페이지를 열어 두세요. 순서는 유지되며 곧 입장이 재개됩니다.',
  'status.active': '입장 차례입니다! 좌석 선택으로 이동합니다…',
  'status.left': '이제 대기열에 있지 않습니다. 다음 분에게 순서가 넘어갔습니다.',
  'status.done.left': '이미 이 대기열에서 나오셨습니다. 다시 오시려면 다시 줄 서기를 눌러 맨 뒤에서 새 순번을 받으세요.',
  'status.done.slot_ended': '입장 시간이 끝났습니다. 다시 오시려면 다시 줄 서기를 눌러 맨 뒤에서 새 순번을 받으세요.',
  'status.done.idle': '페이지가 응답하지 않아 다음 분에게 순서가 넘어갔습니다. 다시 줄 서기를 눌러 새 순번을 받으세요.',
  'status.rejoin': '다시 줄 서기',
  'status.leaving': '대기열에서 나가는 중…',
  'status.needPass': '대기실 통과 기간이 만료되었습니다. 새로 받으러 이동합니다…',
  'err.network': (s) => `대기실 서버에 연결할 수 없습니다. 연결을 확인해 주세요 — ${s}초 후 다시 시도합니다. 순번은 유지됩니다.`,
  'err.busy': (s) => `대기실이 매우 혼잡합니다. 순번은 유지됩니다 — ${s}초 후 다시 시도합니다.`,
  'err.bad': '올바르지 않은 링크입니다. 공연 페이지로 돌아가 다시 시도해 주세요.',
  'err.unknownEvent': (s) => `이 공연은 지금 입장을 받지 않습니다. ${s}초 후 다시 시도합니다.`,
  'err.refused': (s) => `대기실이 요청을 받지 않았습니다. ${s}초 후 다시 시도합니다.`,
  'action.retry': '다시 시도',
  'action.home': '홈으로 가기',
  'err.cookies': '입장 차례이지만 브라우저가 쿠키를 저장하지 않고 있습니다. 이 사이트의 쿠키를 허용한 뒤 새로고침해 주세요.',
  'err.generic': (s) => `일시적인 오류가 발생했습니다. ${s}초 후 다시 시도합니다. 순번은 유지됩니다.`,
  'keepOpen': '이 탭을 열어 두세요. 새로고침해도 순번은 유지됩니다.',
  'doNotClose': '이 페이지를 닫지 마세요! 오래 비워 두면 다음 분에게 순서가 넘어갑니다.',
  'leave': '대기열 나가기',
  'leave.ask': (p) => `대기열에서 나갈까요? 나의 순번(${p}번)은 다음 분에게 넘어가며 되돌릴 수 없습니다.`,
  'leave.confirm': '네, 나가겠습니다',
  'leave.stay': '계속 기다리기',
  'title.left': '대기열에서 나왔습니다',
  'lead.left': '나의 순번은 다음 분에게 넘어갔습니다. 마음이 바뀌셨나요? 다시 줄을 설 수 있습니다.',
  'title.done': '이 대기열의 차례가 끝났습니다',
  'lead.done': '이 순번은 이미 사용되었습니다. 다시 오시려면 다시 줄을 서서 새 순번을 받으세요.',
  'leaveHint': '마음이 바뀌셨나요? 나가면 다음 분에게 자리가 넘어갑니다.',
  'footer': 'vwr 공정 대기실',
  'announce.position': (p, a) => `현재 ${p}번째입니다. 내 앞에 ${a}명이 있습니다.`,
  'announce.tier2': (p, a) => `현재 ${p}번째입니다. 내 앞에 ${a}명이 있습니다.`,
  'of': (a, b) => `${a} / ${b}`,
  'err.notOpen': '이 판매의 사전 대기열이 아직 열리지 않았습니다. 열리면 이 페이지가 자동으로 참여합니다.',
  'title.prequeue': (time) => `${time}에 판매가 시작됩니다`,
  'lead.prequeue': '그때까지 오신 모든 분은 무작위로 순번을 받습니다. 일찍 오거나 새로고침해도 확률은 같습니다.',
  'title.drawing': '지금 순번을 추첨하고 있습니다',
  'lead.drawing': (time) => `${time}에 판매가 시작되었습니다. 기다리신 모든 분께 무작위로 순번을 정하고 있습니다. 몇 초면 끝납니다.`,
  'title.drawn': '순번이 정해졌습니다',
  'lead.drawn': (p) => `나의 순번은 ${p}번입니다. 순번대로 조금씩 입장하며, 차례가 되면 이 페이지가 자동으로 안내합니다.`,
  'pq.title': '순번은 이렇게 정해집니다',
  'pq.lead': '오픈 순간 명단이 마감되고, 아무도 미리 알 수 없는 공개 난수로 추첨해 순서를 정합니다. 이 페이지를 열어 두세요. 자동으로 다음 단계로 넘어갑니다.',
  'pq.drawingNow': '명단이 마감되었습니다. 지금 순번을 추첨하고 있습니다…',
  'pq.opensIn': '오픈까지',
  'pq.round': '추첨에 쓰이는 공개 비컨 라운드',
  'pq.countdown': (h, m, s) => (h > 0 ? `${h}시간 ${m}분 ${s}초` : m > 0 ? `${m}분 ${s}초` : `${s}초`),
  'status.prequeue': '추첨 명단에 들어갔습니다. 이 페이지를 열어 두세요. 자동으로 갱신됩니다.',
  'status.drawing': '명단이 마감되었습니다. 공개 난수가 나오면 바로 모든 분의 순번을 추첨합니다. 몇 초면 끝납니다.',
  'status.drawn': (p) => `추첨이 끝났습니다. 나의 순번은 ${p}번입니다.`,
  'announce.prequeue': '사전 대기열에 있습니다. 오픈 시각에 추첨으로 순서가 정해집니다.',
  'announce.drawing': '사전 대기열이 마감되었습니다. 곧 추첨합니다.',
  'err.cancelled': '주최 측이 이 판매를 취소해 추첨이 없습니다. 영수증은 이 브라우저에 남아 있습니다.',
  'receipt.title': '나의 추첨 영수증',
  'receipt.code': '영수증 번호',
  'receipt.kept': '이 브라우저에 저장되어 있습니다. 나중에 추첨을 확인할 때 쓰입니다.',
  'receipt.waitingSeal': '오픈 순간 응모 명단이 봉인됩니다. 이 브라우저가 봉인을 본 시각을 기록해, 추첨 전에 명단이 확정되었음을 증명합니다.',
  'receipt.sealed': (seen, draw) => `이 브라우저는 ${seen}에 봉인된 응모 명단을 확인했습니다. 추첨 난수가 나온 ${draw}보다 앞선 시각입니다.`,
  'receipt.sealedLate': '이 브라우저는 추첨 난수가 나온 뒤에야 봉인된 명단을 보았기 때문에, 명단이 제때 봉인되었음을 증명할 수 없습니다.',
  'receipt.verify': '내 순번 검증하기',
  'receipt.download': '영수증 내려받기',
  'receipt.details': '자세히 보기',
  'receipt.ticket': '응모권 (요청 ID와 이 브라우저 비밀값의 SHA-256)',
  'receipt.root': '봉인된 명단 (커밋 R)',
  'receipt.seen': '이 브라우저가 봉인을 처음 본 시각',
  'receipt.round': '공개 난수 (drand 라운드)',
  'verify.checking': '공개된 추첨 결과를 이 브라우저에서 확인하는 중…',
  'verify.ok': (p, n) => `이 브라우저에서 확인했습니다. 나의 순번은 ${n}명 중 ${p}번입니다.`,
  'verify.bad': '이 브라우저에서 추첨을 확인하지 못했습니다. 영수증을 내려받아 보관하고 주최 측에 보내 주세요.',
  'verify.error': '지금은 추첨을 확인할 수 없습니다. 잠시 후 다시 시도해 주세요.',
  'verify.limits': '브라우저로는 확인할 수 없는 것: 명단의 응모권이 실제 사람에게서 왔는지, 다른 방문자의 시계가 맞는지. 추첨 규칙과 전문가용 도구는 다음 문서에서 설명합니다:',
  'verify.docs': '추첨은 이렇게 진행됩니다',
  'check.ticket': '응모권이 나의 것입니다. 이 브라우저만 가진 비밀값과 일치합니다.',
  'check.ticket.bad': '응모권이 이 브라우저의 비밀값과 일치하지 않습니다.',
  'check.drawn': '추첨 결과가 공개되었습니다.',
  'check.drawn.bad': '추첨 결과가 아직 공개되지 않았습니다.',
  'check.chain.quicknet': '난수는 League of Entropy의 공개 비컨인 drand quicknet에서 나왔습니다.',
  'check.chain.local': '난수는 공개 drand 비컨이 아니라 이 사이트가 직접 운영하는 시험용 비컨에서 나왔습니다. 운영자는 결과를 미리 알 수 있습니다.',
  'check.chain.unknown': '난수가 공개 drand 비컨에서 나오지 않았습니다.',
  'check.beacon': (r) => `비컨 ${r}번 라운드의 서명이 유효합니다. 아무도 이 난수를 고를 수 없었습니다.`,
  'check.beacon.bad': (r) => `비컨 ${r}번 라운드의 서명이 유효하지 않습니다.`,
  'check.timing': '공개된 시각으로 보면, 명단은 난수가 나오기 전에 봉인되었습니다.',
  'check.timing.bad': '공개된 시각으로 보면, 명단이 너무 늦게 봉인되었습니다.',
  'check.sealed': '이 브라우저가 난수가 나오기 전에 봉인된 명단을 직접 확인했습니다.',
  'check.sealed.noR': '이 브라우저는 추첨 전에 봉인된 명단을 보지 못해, 명단이 제때 봉인되었음을 증명할 수 없습니다.',
  'check.sealed.Rchanged': '이 브라우저가 본 뒤에 봉인된 명단이 바뀌었습니다.',
  'check.sealed.Rseenlate': '이 브라우저는 난수가 나온 뒤에야 봉인된 명단을 보았기 때문에, 명단이 제때 봉인되었음을 증명할 수 없습니다.',
  'check.list': '공개된 응모 명단이 봉인과 일치합니다.',
  'check.list.bad': '공개된 응모 명단이 봉인과 일치하지 않습니다.',
  'check.included': '나의 응모권이 명단에 있습니다.',
  'check.included.bad': '나의 응모권이 명단에 없습니다.',
  'check.order': (p) => `명단과 난수로 모든 순번을 다시 계산했습니다. 나의 순번은 ${p}번입니다.`,
  'check.order.bad': (p) => `순번을 다시 계산하면 ${p}번인데, 공개된 순번과 다릅니다.`,
  'lang.switch': 'English',
};

const tables = { en, ko };

/** LANG_COOKIE keeps the visitor's language choice for every page of the site. */
export const LANG_COOKIE = 'urr-lang';

/** pickLang returns "ko" or "en" from a ?lang= value, the cookie's and a navigator.language, in that order. */
export function pickLang(param, navigatorLang, cookieLang) {
  // An unknown value falls through to the next.
  for (const v of [param, cookieLang, navigatorLang]) {
    const base = String(v || '').toLowerCase().split('-')[0];
    if (Object.hasOwn(tables, base)) return base;
  }
  return 'en';
}

/** cookieLang reads the urr-lang cookie from a document.cookie string. */
export function cookieLang(cookie) {
  for (const part of String(cookie || '').split(';')) {
    const [k, v] = part.trim().split('=');
    if (k === LANG_COOKIE) return v;
  }
  return undefined;
}

/** langCookie is the Set-Cookie text that remembers lang for a year, site-wide. */
export function langCookie(lang) {
  return `${LANG_COOKIE}=${lang}; Path=/; Max-Age=31536000; SameSite=Lax`;
}

/**
 * withLang adds ?lang= to a same-site path when the page itself was opened
 * with one, so the address the visitor lands on says the language too.
 */
export function withLang(path, lang, loc = globalThis.location) {
  if (!new URLSearchParams(loc?.search || '').get('lang')) return path;
  const u = new URL(path, 'https://vwr.invalid');
  u.searchParams.set('lang', lang);
  return u.pathname + u.search + u.hash;
}

/** translator returns t(key, ...args) for one language. */
export function translator(lang) {
  const table = tables[lang] || en;
  return (key, ...args) => {
    const v = key in table ? table[key] : en[key];
    if (typeof v === 'function') return v(...args);
    return v ?? key;
  };
}

/** number formats an integer with the language's grouping (12,345). */
export function formatNumber(lang, n) {
  return new Intl.NumberFormat(lang === 'ko' ? 'ko-KR' : 'en-US').format(n);
}

/** formatWait turns seconds into a friendly estimate. */
export function formatWait(t, seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return t('calculating');
  if (seconds < 60) return t('lessThanMinute');
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return t('minutes', minutes);
  return t('hours', Math.floor(minutes / 60), minutes % 60);
}

/**
 * formatRange writes a waitRange (wait.js) in the page's language, with
 * hours in the language's own decimal style.
 */
export function formatRange(t, lang, r) {
  const num = (x) => new Intl.NumberFormat(lang === 'ko' ? 'ko-KR' : 'en-US', { maximumFractionDigits: 1 }).format(x);
  switch (r?.kind) {
    case 'soon': return t('range.soon');
    case 'minutes': return t('range.minutes', num(r.lo), num(r.hi));
    case 'hours': return t('range.hours', num(r.lo), num(r.hi));
    default: return t('calculating');
  }
}

/** formatAhead writes a roundAhead (wait.js): "about 1,200" or "37". */
export function formatAhead(t, lang, r) {
  const s = formatNumber(lang, r.n);
  return r.about ? t('aboutN', s) : s;
}

/**
 * applyStatic fills every element carrying data-i18n with its string, sets
 * <html lang> and points the #lang link at this page in the other language.
 * Pages call it once at start.
 */
export function applyStatic(doc, lang, t) {
  doc.documentElement.lang = lang;
  for (const el of doc.querySelectorAll('[data-i18n]')) {
    el.textContent = t(el.dataset.i18n);
  }
  const link = doc.getElementById('lang');
  if (link) {
    const other = lang === 'ko' ? 'en' : 'ko';
    const p = new URLSearchParams(doc.location?.search || '');
    p.set('lang', other);
    link.href = `?${p}`;
    link.lang = other;
    link.textContent = t('lang.switch');
  }
}

/** langOfPath reads ?lang= from a same-site path like /events/E?lang=ko. */
export function langOfPath(path) {
  if (typeof path !== 'string' || !path.startsWith('/')) return undefined;
  try {
    return new URL(path, 'https://vwr.invalid').searchParams.get('lang') || undefined;
  } catch {
    return undefined;
  }
}

/**
 * currentLang picks this page's language (?lang=, the cookie, the browser)
 * and, when ?lang= chose it, remembers the choice in the cookie.
 */
export function currentLang(loc = globalThis.location, nav = globalThis.navigator, doc = globalThis.document) {
  const query = new URLSearchParams(loc?.search || '');
  // The edge sends /events/E?lang=ko to the waiting room as ?return=/events/E?lang=ko.
  const param = query.get('lang') || langOfPath(query.get('return'));
  const lang = pickLang(param, nav?.language, cookieLang(doc?.cookie));
  if (doc && param && String(param).toLowerCase().split('-')[0] === lang) {
    try {
      doc.cookie = langCookie(lang);
    } catch {
      // Cookies off: ?lang= still works page by page.
    }
  }
  return lang;
}
