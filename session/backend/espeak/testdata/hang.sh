#!/bin/sh
# Writes a WAV header, then sleeps in a child that holds stdout open:
# only a kill of the whole process group ends it promptly.
printf "RIFF\044\360\377\177WAVEfmt \020\000\000\000\001\000\001\000\042\126\000\000\104\254\000\000\002\000\020\000data\000\360\377\177"
printf "\001\002\003\004"
sleep 30 &
wait
