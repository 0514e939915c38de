# bash completion for bpfsight.
# Every word offered comes from the bpfsight being completed (`bpfsight __complete ...`):
# its commands, each command's getopt options, the families of -t, the reports of -r, the
# formats and dump kinds, so the completion always matches the installed version.

# The bpfsight on the command line when it can be run (./build/bpfsight), else the one in PATH.
_bpfsight_exe()
{
	local exe=${COMP_WORDS[0]}
	[[ $exe == */* && -x $exe ]] || exe=bpfsight
	printf '%s' "$exe"
}

# COMPREPLY from a word list; for a comma-separated option value (-t osrt,sc) only the part
# after the last comma is completed and the rest kept. $_bpfsight_pre: "--opt=" when the
# value came in one word with its option (COMP_WORDBREAKS without '=').
_bpfsight_reply()
{
	local cur=$1 list=$2 comma=$3 head=$_bpfsight_pre
	if [[ $comma && $cur == *,* ]]; then
		head+=${cur%,*},
		cur=${cur##*,}
	fi
	local IFS=$'\n'
	COMPREPLY=($(compgen -P "$head" -W "$list" -- "$cur"))
}

_bpfsight()
{
	local exe cur prev cmd i cmdidx=0
	exe=$(_bpfsight_exe)
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	# The command is the first word after bpfsight that is not an option.
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} != -* ]]; then
			cmdidx=$i
			break
		fi
	done
	if ((cmdidx == 0)); then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$("$exe" __complete commands 2>/dev/null)" -- "$cur"))
		fi
		return 0
	fi
	cmd=${COMP_WORDS[cmdidx]}

	# record -- CMD ARGS: the rest is the traced command's.
	if [[ $cmd == record ]]; then
		for ((i = cmdidx + 1; i < COMP_CWORD; i++)); do
			if [[ ${COMP_WORDS[i]} == -- ]]; then
				COMPREPLY=($(compgen -c -- "$cur"))
				return 0
			fi
		done
	fi

	# --opt=value arrives as "--opt" "=" "value" (COMP_WORDBREAKS has '='), or as one word.
	local opt= _bpfsight_pre=
	if [[ $cur == --*=* ]]; then
		opt=${cur%%=*}
		cur=${cur#*=}
		_bpfsight_pre=$opt=
	elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
		opt=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $cur == = ]]; then
		opt=$prev
		cur=
	elif [[ $prev == -* ]]; then
		opt=$prev
	fi

	case "$cmd:$opt" in
	record:-t | record:--trace | monitor:-t | monitor:--trace)
		_bpfsight_reply "$cur" "$("$exe" __complete families 2>/dev/null)" 1
		return 0
		;;
	stats:-r | stats:--report)
		_bpfsight_reply "$cur" "$("$exe" __complete reports 2>/dev/null)" 1
		return 0
		;;
	stats:-f | stats:--format)
		_bpfsight_reply "$cur" "$("$exe" __complete stats-formats 2>/dev/null)"
		return 0
		;;
	export:-f | export:--format)
		_bpfsight_reply "$cur" "$("$exe" __complete export-formats 2>/dev/null)"
		return 0
		;;
	dump:-k | dump:--kind)
		_bpfsight_reply "$cur" "$("$exe" __complete kinds 2>/dev/null)" 1
		return 0
		;;
	shim:-i | shim:--install)
		COMPREPLY=($(compgen -d -- "$cur"))
		return 0
		;;
	merge:-f | merge:--format)
		_bpfsight_reply "$cur" $'table\njson'
		return 0
		;;
	record:-o | record:--output | export:-o | export:--output | report:-o | report:--output | \
		merge:-o | merge:--output | merge:-r | merge:--reference)
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0
		;;
	esac
	# Any other long option that takes a value (--pid, --duration, ...): nothing to offer.
	if [[ $opt == --* ]] && "$exe" __complete options "$cmd" 2>/dev/null | grep -qxF -- "$opt="; then
		return 0
	fi

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$("$exe" __complete options "$cmd" 2>/dev/null)" -- "$cur"))
		# --trace= waits for its value: no space after it.
		[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
		return 0
	fi
	[[ $cmd == record ]] && return 0 # a command to run, after --
	compopt -o filenames 2>/dev/null
	COMPREPLY=($(compgen -f -- "$cur"))
	return 0
}

complete -F _bpfsight bpfsight
