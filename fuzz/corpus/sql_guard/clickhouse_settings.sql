SELECT * FROM `url` /* c */ ('http://x', 'TSV', 'a String') SETTINGS readonly = 0 FORMAT JSON # x
