#!/bin/bash
# Rebuild the hard-English-speech clip set from Debian 12 (bookworm) packages.
# Usage: bash samples/fetch-hard-clips.sh TARGET_DIR      (needs: apt-get, dpkg, ffmpeg, python3 stdlib)
# Optional: DEBCACHE=/dir/with/already/downloaded/debs (used before apt-get download)
set -euo pipefail
T="${1:?usage: fetch-hard-clips.sh TARGET_DIR}"
mkdir -p "$T"; T="$(cd "$T" && pwd)"
W="$T/.work"; mkdir -p "$W/debs" "$W/x"
MAN="$W/manifest.tsv"
# manifest: OUTFILE <TAB> PACKAGE <TAB> VERSION <TAB> PATH-IN-PACKAGE <TAB> PATH-INSIDE-ZIP-or-- <TAB> REFERENCE
sed -n '/^__MANIFEST__$/,$p' "$0" | tail -n +2 > "$MAN"
command -v ffmpeg >/dev/null || { apt-get update && apt-get install -y ffmpeg; }
cut -f2,3 "$MAN" | sort -u | while IFS=$'\t' read -r P V; do
  f=$(ls "$W/debs/${P}_"*.deb 2>/dev/null | head -1 || true)
  if [ -z "$f" ] && [ -n "${DEBCACHE:-}" ]; then
    c=$(ls "$DEBCACHE/${P}_"*"${V#*:}"_*.deb 2>/dev/null | head -1 || true); [ -n "$c" ] && cp "$c" "$W/debs/"
  fi
  f=$(ls "$W/debs/${P}_"*.deb 2>/dev/null | head -1 || true)
  [ -z "$f" ] && (cd "$W/debs" && apt-get download "$P=$V")
  f=$(ls "$W/debs/${P}_"*.deb | head -1)
  [ -d "$W/x/$P" ] || { mkdir -p "$W/x/$P"; dpkg -x "$f" "$W/x/$P"; }
done
: > "$T/transcripts.tsv"
while IFS=$'\t' read -r OUT P V PATHP INNER REF; do
  SRC="$W/x/$P/$PATHP"
  if [ "$INNER" != "-" ]; then
    python3 - "$SRC" "$INNER" "$W/tmp.ogg" <<'PY'
import sys, zipfile
open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))
PY
    SRC="$W/tmp.ogg"
  fi
  ffmpeg -nostdin -v error -y -i "$SRC" -t 30 -ac 1 -ar 16000 -sample_fmt s16 "$T/$OUT"
  printf '%s\t%s\n' "$OUT" "$REF" >> "$T/transcripts.tsv"
done < "$MAN"
rm -rf "$W"
echo "done: $(wc -l < "$T/transcripts.tsv") clips in $T"
exit 0
__MANIFEST__
wz_com021.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com021.ogg	scavengers detected
wz_com022.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com022.ogg	scavenger base detected
wz_com023.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com023.ogg	scavenger outpost detected
wz_com024.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com024.ogg	resource detected
wz_com025.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com025.ogg	artefact detected
wz_com026.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com026.ogg	enemy detected
wz_com027.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com027.ogg	enemy base detected
wz_com028.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com028.ogg	ally detected
wz_com029.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com029.ogg	enemy transport detected
wz_com031.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com031.ogg	friendly landing zone detected
wz_com032.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com032.ogg	nexus tower detected
wz_com033.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com033.ogg	nexus turret detected
wz_com034.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com034.ogg	nexus detected
wz_com035.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com035.ogg	enemy battery detected
wz_com036.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com036.ogg	enemy vtols detected
wz_com037.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com037.ogg	route obstructed
wz_com038.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com038.ogg	no route available
wz_com039.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com039.ogg	unable to comply
wz_com040.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com040.ogg	returning for repair
wz_com041.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/com041.ogg	heading for rally point
wz_t-arboys.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/trnsppil/t-arboys.ogg	alright boys
wz_t-grnli5.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/trnsppil/t-grnli5.ogg	you will have a green light in five
wz_t-gogogo.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/trnsppil/t-gogogo.ogg	go go go
wz_t-dustof.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/trnsppil/t-dustof.ogg	prepare for dust off
wz_v-onway1.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-onway1.ogg	on our way
wz_v-locon1.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-locon1.ogg	locked on
wz_v-atkrn1.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-atkrn1.ogg	commencing attack run
wz_v-abtrn1.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-abtrn1.ogg	aborting attack run
wz_v-eloc2.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-eloc2.ogg	enemy located
wz_v-onway2.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-onway2.ogg	on our way
wz_v-retba2.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-retba2.ogg	returning to base
wz_v-atkrn2.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-atkrn2.ogg	commencing attack run
wz_v-abtrn2.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-abtrn2.ogg	aborting attack run
wz_v-retba3.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-retba3.ogg	returning to base
wz_v-locon3.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-locon3.ogg	locked on
wz_v-abtrn3.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/vtoltalk/v-abtrn3.ogg	aborting attack run
wz_col011a.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/coltive/col011a.ogg	cleanse and destroy
wz_col012a.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/coltive/col012a.ogg	affirmative destroying biologicals
wz_col017a.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/coltive/col017a.ogg	starting attack run
wz_col019a.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/coltive/col019a.ogg	intercept and destroy
wz_group.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/group.ogg	group
wz_reprting.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/reprting.ogg	reporting
wz_commnder.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/commnder.ogg	commander
wz_tut1.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut1.ogg	in this training session you'll learn how to build an effective base
wz_tut2.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut2.ogg	oil resources are key to your success
wz_tut3.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut3.ogg	to build an oil derrick select one of your trucks
wz_tut7.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut7.ogg	left click the flashing build icon
wz_tut9.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut9.ogg	position the square at your base and left click to start the build process
wz_tut10.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut10.ogg	to increase your build rate select your second truck
wz_tut11.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut11.ogg	now left click the power generator site
wz_tut13.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut13.ogg	during missions you need to locate and recover technologies from before the collapse
wz_tut15.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut15.ogg	use a truck to search for the artifact indicated by the radar pulse
wz_tut18.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut18.ogg	a research facility is required to research artifacts
wz_tut20.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut20.ogg	now left click the research facility and position it at your base
wz_tut21.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut21.ogg	use your other truck to help build the research facility
wz_tut24.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut24.ogg	the artifact is now being researched by the facility
wz_tut28.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut28.ogg	the researched machinegun can now be used to design a new vehicle
wz_tut30.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut30.ogg	to start your design left click the new design icon
wz_tut31.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut31.ogg	now left click the vehicle body icon
wz_tut32.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut32.ogg	then left click the viper body
wz_tut33.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut33.ogg	left click the wheels icon
wz_tut34.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut34.ogg	then left click the machinegun to complete your design
wz_tut37.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut37.ogg	to finalize your design left click the close icon
wz_tut44.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut44.ogg	you can move the delivery point at any time by left clicking it
wz_tut48.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut48.ogg	left click the flashing manufacture icon
wz_tut81.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/tutorial/tut81.ogg	congratulations commander you are ready for your first mission
wz_pcv331.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/desnseq/pcv331.ogg	turret selected
wz_pcv332.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/desnseq/pcv332.ogg	body selected
wz_pcv333.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/desnseq/pcv333.ogg	propulsion selected
wz_pcv334.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/desnseq/pcv334.ogg	design completed
wz_pcv335.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/struct/pcv335.ogg	construction started
wz_pcv336.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/struct/pcv336.ogg	construction completed
wz_pcv337.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/struct/pcv337.ogg	structure under attack
wz_pcv339.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/struct/pcv339.ogg	structure repair in progress
wz_pcv340.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/struct/pcv340.ogg	structure demolished
wz_pcv341.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/power/pcv341.ogg	power generator under attack
wz_pcv342.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/power/pcv342.ogg	power generator destroyed
wz_pcv343.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/power/pcv343.ogg	power low
wz_pcv345.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/power/pcv345.ogg	derrick under attack
wz_pcv346.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/power/pcv346.ogg	derrick destroyed
wz_pcv347.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/power/pcv347.ogg	resource depleted
wz_pcv348.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/power/pcv348.ogg	power transfer in progress
wz_pcv349.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/power/pcv349.ogg	power generator required
wz_pcv350.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv350.ogg	research facility required
wz_pcv352.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv352.ogg	artefact recovered
wz_pcv353.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv353.ogg	new research project available
wz_pcv354.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv354.ogg	new structure available
wz_pcv355.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv355.ogg	new component available
wz_pcv356.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv356.ogg	new cyborg available
wz_pcv357.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv357.ogg	research completed
wz_pcv358.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv358.ogg	major research completed
wz_pcv359.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv359.ogg	structure research completed
wz_pcv360.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv360.ogg	power research completed
wz_pcv361.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv361.ogg	computer research completed
wz_pcv362.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv362.ogg	vehicle research completed
wz_pcv363.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv363.ogg	systems research completed
wz_pcv364.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv364.ogg	weapon research completed
wz_pcv365.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/research/pcv365.ogg	cyborg research completed
wz_pcv366.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/productn/pcv366.ogg	production started
wz_pcv367.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/productn/pcv367.ogg	production completed
wz_pcv368.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/productn/pcv368.ogg	production paused
wz_pcv369.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/productn/pcv369.ogg	production cancelled
wz_pcv370.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/productn/pcv370.ogg	delivery point assigned
wz_pcv372.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/repair/pcv372.ogg	unit repaired
wz_pcv373.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv373.ogg	scavengers detected
wz_pcv374.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv374.ogg	scavenger base detected
wz_pcv375.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv375.ogg	scavenger outpost detected
wz_pcv376.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv376.ogg	resource detected
wz_pcv377.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv377.ogg	artefact detected
wz_pcv378.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv378.ogg	enemy unit detected
wz_pcv379.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv379.ogg	enemy base detected
wz_pcv380.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv380.ogg	ally detected
wz_pcv381.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv381.ogg	enemy transport detected
wz_pcv383.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv383.ogg	friendly landing zone detected
wz_pcv384.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv384.ogg	nexus tower detected
wz_pcv385.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv385.ogg	nexus turret detected
wz_pcv386.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv386.ogg	nexus unit detected
wz_pcv387.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv387.ogg	enemy battery detected
wz_pcv388.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/detect/pcv388.ogg	enemy vtols detected
wz_pcv389.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/status/pcv389.ogg	scavenger base
wz_pcv390.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/status/pcv390.ogg	scavenger outpost
wz_pcv391.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/status/pcv391.ogg	scavenger outpost eradicated
wz_pcv392.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/status/pcv392.ogg	scavenger base eradicated
wz_pcv393.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/status/pcv393.ogg	enemy base
wz_pcv394.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/status/pcv394.ogg	enemy base eradicated
wz_pcv395.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/status/pcv395.ogg	incoming enemy transport
wz_pcv396.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/status/pcv396.ogg	enemy landing zone
wz_pcv399.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/combat/pcv399.ogg	unit under attack
wz_pcv400.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/combat/pcv400.ogg	unit destroyed
wz_pcv401.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/combat/pcv401.ogg	unit retreating
wz_pcv402.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/combat/pcv402.ogg	unit returning for repair
wz_pcv403.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/artbat/pcv403.ogg	assigned to sensor
wz_pcv404.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/artbat/pcv404.ogg	sensor locked on
wz_pcv405.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/artbat/pcv405.ogg	assigned to counter battery radar
wz_pcv406.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/artbat/pcv406.ogg	enemy battery located
wz_pcv407.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/artbat/pcv407.ogg	battery firing counter attack
wz_pcv408.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/vtols/pcv408.ogg	interceptors launched
wz_pcv409.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/vtols/pcv409.ogg	re arming
wz_pcv410.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/vtols/pcv410.ogg	vtols engaging
wz_pcv412.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/vtols/pcv412.ogg	interceptors assigned
wz_pcv413.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/console/pcv413.ogg	command console activated
wz_digit_1.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/1.ogg	one
wz_digit_2.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/2.ogg	two
wz_digit_3.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/3.ogg	three
wz_digit_4.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/4.ogg	four
wz_digit_5.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/5.ogg	five
wz_digit_6.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/6.ogg	six
wz_digit_7.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/7.ogg	seven
wz_digit_8.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/8.ogg	eight
wz_digit_9.wav	warzone2100-data	4.3.3-3	usr/share/games/warzone2100/base.wz	audio/memressp/cmndrvoc/9.ogg	nine
hw_british_brilliant.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/British/Brilliant.ogg	-	brilliant
hw_british_firstblood.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/British/Firstblood.ogg	-	first blood
hw_british_incoming.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/British/Incoming.ogg	-	incoming
hw_british_justyouwait.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/British/Justyouwait.ogg	-	just you wait
hw_british_runaway.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/British/Runaway.ogg	-	run away
hw_british_watchit.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/British/Watchit.ogg	-	watch it
hw_classic_amazing.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Amazing.ogg	-	amazing
hw_classic_brilliant.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Brilliant.ogg	-	brilliant
hw_classic_byebye.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Byebye.ogg	-	bye bye
hw_classic_comeonthen.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Comeonthen.ogg	-	come on then
hw_classic_coward.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Coward.ogg	-	coward
hw_classic_drat.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Drat.ogg	-	drat
hw_classic_enemydown.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Enemydown.ogg	-	enemy down
hw_classic_excellent.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Excellent.ogg	-	excellent
hw_classic_firstblood.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Firstblood.ogg	-	first blood
hw_classic_flawless.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Flawless.ogg	-	flawless
hw_classic_gonnagetyou.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Gonnagetyou.ogg	-	gonna get you
hw_classic_hello.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Hello.ogg	-	hello
hw_classic_hurry.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Hurry.ogg	-	hurry
hw_classic_illgetyou.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Illgetyou.ogg	-	i'll get you
hw_classic_incoming.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Incoming.ogg	-	incoming
hw_classic_justyouwait.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Justyouwait.ogg	-	just you wait
hw_classic_reinforcements.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Reinforcements.ogg	-	reinforcements
hw_classic_runaway.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Runaway.ogg	-	run away
hw_classic_sameteam.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Sameteam.ogg	-	same team
hw_classic_solong.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Solong.ogg	-	so long
hw_classic_stupid.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Stupid.ogg	-	stupid
hw_classic_takecover.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Takecover.ogg	-	take cover
hw_classic_victory.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Victory.ogg	-	victory
hw_classic_watchit.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Watchit.ogg	-	watch it
hw_classic_watchthis.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Watchthis.ogg	-	watch this
hw_classic_yessir.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Yessir.ogg	-	yes sir
hw_classic_youllregretthat.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Classic/Youllregretthat.ogg	-	you'll regret that
hw_default_drat.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Drat.ogg	-	drat
hw_default_flawless.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Flawless.ogg	-	flawless
hw_default_hurry.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Hurry.ogg	-	hurry
hw_default_melon.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Melon.ogg	-	melon
hw_default_solong.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Solong.ogg	-	so long
hw_default_victory.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Victory.ogg	-	victory
hw_default_watchit.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Watchit.ogg	-	watch it
hw_default_watchthis.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Watchthis.ogg	-	watch this
hw_default_yessir.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Yessir.ogg	-	yes sir
hw_default_youllregretthat.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Default/Youllregretthat.ogg	-	you'll regret that
hw_hillbilly_cutitout.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/HillBilly/Cutitout.ogg	-	cut it out
hw_mobster_brilliant.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Mobster/Brilliant.ogg	-	brilliant
hw_mobster_comeonthen.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Mobster/Comeonthen.ogg	-	come on then
hw_mobster_enemydown.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Mobster/Enemydown.ogg	-	enemy down
hw_mobster_grenade.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Mobster/Grenade.ogg	-	grenade
hw_mobster_justyouwait.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Mobster/Justyouwait.ogg	-	just you wait
hw_pirate_comeonthen.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Pirate/Comeonthen.ogg	-	come on then
hw_pirate_melon.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Pirate/Melon.ogg	-	melon
hw_russian_cutitout.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Cutitout.ogg	-	cut it out
hw_russian_enemydown.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Enemydown.ogg	-	enemy down
hw_russian_excellent.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Excellent.ogg	-	excellent
hw_russian_flawless.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Flawless.ogg	-	flawless
hw_russian_grenade.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Grenade.ogg	-	grenade
hw_russian_hello.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Hello.ogg	-	hello
hw_russian_illgetyou.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Illgetyou.ogg	-	i'll get you
hw_russian_justyouwait.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Justyouwait.ogg	-	just you wait
hw_russian_melon.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Melon.ogg	-	melon
hw_russian_reinforcements.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Reinforcements.ogg	-	reinforcements
hw_russian_revenge.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Revenge.ogg	-	revenge
hw_russian_runaway.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Runaway.ogg	-	run away
hw_russian_solong.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Solong.ogg	-	so long
hw_russian_victory.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Victory.ogg	-	victory
hw_russian_watchit.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Watchit.ogg	-	watch it
hw_russian_watchthis.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Watchthis.ogg	-	watch this
hw_russian_youllregretthat.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Russian/Youllregretthat.ogg	-	you'll regret that
hw_surfer_justyouwait.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Surfer/Justyouwait.ogg	-	just you wait
hw_surfer_youllregretthat.wav	hedgewars-data	1.0.2-6	usr/share/games/hedgewars/Data/Sounds/voices/Surfer/Youllregretthat.ogg	-	you'll regret that
kl_en_gb_alpha_a.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/a.ogg	-	a
kl_en_gb_alpha_b.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/b.ogg	-	b
kl_en_gb_alpha_c.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/c.ogg	-	c
kl_en_gb_alpha_d.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/d.ogg	-	d
kl_en_gb_alpha_e.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/e.ogg	-	e
kl_en_gb_alpha_f.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/f.ogg	-	f
kl_en_gb_alpha_g.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/g.ogg	-	g
kl_en_gb_alpha_h.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/h.ogg	-	h
kl_en_gb_alpha_i.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/i.ogg	-	i
kl_en_gb_alpha_j.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/j.ogg	-	j
kl_en_gb_alpha_k.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/k.ogg	-	k
kl_en_gb_alpha_l.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/l.ogg	-	l
kl_en_gb_alpha_m.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/m.ogg	-	m
kl_en_gb_alpha_n.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/n.ogg	-	n
kl_en_gb_alpha_o.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/o.ogg	-	o
kl_en_gb_alpha_p.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/p.ogg	-	p
kl_en_gb_alpha_q.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/q.ogg	-	q
kl_en_gb_alpha_r.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/r.ogg	-	r
kl_en_gb_alpha_s.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/s.ogg	-	s
kl_en_gb_alpha_t.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/t.ogg	-	t
kl_en_gb_alpha_u.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/u.ogg	-	u
kl_en_gb_alpha_v.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/v.ogg	-	v
kl_en_gb_alpha_w.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/w.ogg	-	w
kl_en_gb_alpha_x.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/x.ogg	-	x
kl_en_gb_alpha_y.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/y.ogg	-	y
kl_en_gb_alpha_z.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/alpha/z.ogg	-	z
kl_en_gb_syllab_sky.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en_GB/syllab/sky.ogg	-	sky
kl_en_alpha_a.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/A.ogg	-	a
kl_en_alpha_b.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/B.ogg	-	b
kl_en_alpha_c.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/C.ogg	-	c
kl_en_alpha_d.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/D.ogg	-	d
kl_en_alpha_e.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/E.ogg	-	e
kl_en_alpha_f.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/F.ogg	-	f
kl_en_alpha_g.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/G.ogg	-	g
kl_en_alpha_h.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/H.ogg	-	h
kl_en_alpha_i.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/I.ogg	-	i
kl_en_alpha_j.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/J.ogg	-	j
kl_en_alpha_k.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/K.ogg	-	k
kl_en_alpha_l.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/L.ogg	-	l
kl_en_alpha_m.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/M.ogg	-	m
kl_en_alpha_n.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/N.ogg	-	n
kl_en_alpha_o.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/O.ogg	-	o
kl_en_alpha_p.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/P.ogg	-	p
kl_en_alpha_q.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/Q.ogg	-	q
kl_en_alpha_r.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/R.ogg	-	r
kl_en_alpha_s.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/S.ogg	-	s
kl_en_alpha_t.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/T.ogg	-	t
kl_en_alpha_u.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/U.ogg	-	u
kl_en_alpha_v.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/V.ogg	-	v
kl_en_alpha_w.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/W.ogg	-	w
kl_en_alpha_x.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/X.ogg	-	x
kl_en_alpha_y.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/Y.ogg	-	y
kl_en_alpha_z.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/alpha/Z.ogg	-	z
kl_en_syllab_car.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/car.ogg	-	car
kl_en_syllab_dog.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/dog.ogg	-	dog
kl_en_syllab_fix.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/fix.ogg	-	fix
kl_en_syllab_gas.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/gas.ogg	-	gas
kl_en_syllab_gem.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/gem.ogg	-	gem
kl_en_syllab_hot.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/hot.ogg	-	hot
kl_en_syllab_jet.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/jet.ogg	-	jet
kl_en_syllab_key.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/key.ogg	-	key
kl_en_syllab_me.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/me.ogg	-	me
kl_en_syllab_my.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/my.ogg	-	my
kl_en_syllab_no.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/no.ogg	-	no
kl_en_syllab_pet.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/pet.ogg	-	pet
kl_en_syllab_saw.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/saw.ogg	-	saw
kl_en_syllab_say.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/say.ogg	-	say
kl_en_syllab_sit.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/sit.ogg	-	sit
kl_en_syllab_sky.wav	klettres-data	4:22.12.3-1	usr/share/klettres/en/syllab/sky.ogg	-	sky
kt_ball.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/ball.ogg	-	ball
kt_bow.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/bow.ogg	-	bow
kt_coat.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/coat.ogg	-	coat
kt_ear.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/ear.ogg	-	ear
kt_earring.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/earring.ogg	-	earring
kt_eye.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/eye.ogg	-	eye
kt_eyebrow.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/eyebrow.ogg	-	eyebrow
kt_flower.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/flower.ogg	-	flower
kt_hair.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/hair.ogg	-	hair
kt_hat.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/hat.ogg	-	hat
kt_moustache.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/moustache.ogg	-	moustache
kt_mouth.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/mouth.ogg	-	mouth
kt_nose.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/nose.ogg	-	nose
kt_shoe.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/shoe.ogg	-	shoe
kt_shorts.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/shorts.ogg	-	shorts
kt_skirt.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/skirt.ogg	-	skirt
kt_spectacles.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/spectacles.ogg	-	spectacles
kt_stick.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/stick.ogg	-	stick
kt_sunglasses.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/sunglasses.ogg	-	sunglasses
kt_tie.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/tie.ogg	-	tie
kt_umbrella.wav	ktuberling-data	4:22.12.3-1	usr/share/ktuberling/sounds/en/umbrella.ogg	-	umbrella
